//go:build !unix

package main

// mkfifo fails: this platform has no named pipes.
func mkfifo(path string) error { return errNoFIFO }
