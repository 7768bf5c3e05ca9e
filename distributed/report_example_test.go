package distributed_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/emberml/ember/distributed"
)

// A launcher gives every rank a FailureFile (ember launch sets
// EMBER_DIST_FAILURE_FILE) and, when the job fails, reads the reports to
// name the rank at fault. Here rank 1 of two holds another token: both
// ranks fail at once, and both reports name rank 1.
func ExampleReadFailureReport() {
	dir, err := os.MkdirTemp("", "reports")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for rank 0's rendezvous
	if err != nil {
		log.Fatal(err)
	}
	master := ln.Addr().String()
	ln.Close()

	var wg sync.WaitGroup
	for rank, token := range []string{"secret", "another secret"} {
		wg.Go(func() {
			g, err := distributed.NewTCPGroup(context.Background(), distributed.Config{
				Rank: rank, WorldSize: 2, MasterAddr: master, Token: token, Timeout: time.Minute,
				FailureFile: filepath.Join(dir, fmt.Sprintf("rank-%d.json", rank)),
			})
			if err == nil {
				g.Close()
			}
		})
	}
	wg.Wait()
	for rank := range 2 {
		r, err := distributed.ReadFailureReport(filepath.Join(dir, fmt.Sprintf("rank-%d.json", rank)))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("rank %d reports rank %d: %s\n", r.Rank, r.FailedRank, r.Error)
	}
	// Output:
	// rank 0 reports rank 1: distributed: rendezvous: peer rank 1: authentication failed between rank 1 and rank 0: their tokens (EMBER_DIST_TOKEN) differ
	// rank 1 reports rank 1: distributed: rank 1: rendezvous: authentication failed between rank 1 and rank 0: their tokens (EMBER_DIST_TOKEN) differ
}
