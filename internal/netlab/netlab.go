// Package netlab builds small networks of Linux network namespaces for
// tests and benchmarks that stand for several machines: a namespace per
// host, each with one veth interface whose other end is on a bridge in a
// namespace of its own, as machines on one switch. Links may be shaped to a
// rate with tc's token bucket filter, as a NIC of that speed would. It
// needs root and iproute2; New skips the test otherwise.
package netlab

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Lab is a network of hosts on one switch.
type Lab struct {
	Hosts []string // network namespace of each host
	Addrs []string // IPv4 address of each host
	ip    string   // path of ip(8)
}

// New builds a lab of n hosts (at most 250), removed when t ends; rate is
// a tc rate such as "1gbit" that shapes every host's link both ways (a
// 256 KB bucket), or "" for unshaped links.
func New(t testing.TB, n int, rate string) *Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs iproute2's ip")
	}
	if _, err := exec.LookPath("tc"); rate != "" && err != nil {
		t.Skip("needs iproute2's tc to shape the links")
	}
	run := func(name string, args ...string) error {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	ip := func(args ...string) error { return run(ipPath, args...) }
	id := strconv.Itoa(os.Getpid() % 100000)
	sw := "ember-sw-" + id
	if err := ip("netns", "add", sw); err != nil {
		t.Skipf("cannot create network namespaces here: %v", err)
	}
	lab := &Lab{ip: ipPath}
	t.Cleanup(func() {
		for _, ns := range lab.Hosts {
			ip("netns", "del", ns) // takes its veth pair with it
		}
		ip("netns", "del", sw)
	})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ip("-n", sw, "link", "add", "br0", "type", "bridge"))
	must(ip("-n", sw, "link", "set", "br0", "up"))
	for h := range n {
		ns := fmt.Sprintf("ember-h%d-%s", h, id)
		must(ip("netns", "add", ns))
		lab.Hosts = append(lab.Hosts, ns)
		lab.Addrs = append(lab.Addrs, fmt.Sprintf("10.213.9.%d", h+1))
		nic, port := fmt.Sprintf("eh%d-%s", h, id), fmt.Sprintf("es%d-%s", h, id)
		for _, step := range [][]string{
			{"link", "add", nic, "type", "veth", "peer", "name", port},
			{"link", "set", nic, "netns", ns},
			{"link", "set", port, "netns", sw},
			{"-n", sw, "link", "set", port, "master", "br0"},
			{"-n", sw, "link", "set", port, "up"},
			{"-n", ns, "addr", "add", lab.Addrs[h] + "/24", "dev", nic},
			{"-n", ns, "link", "set", nic, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			must(ip(step...))
		}
		if rate != "" {
			// The host's egress on its NIC, and the switch port's egress
			// towards the host: the link's two directions.
			for _, end := range [][2]string{{ns, nic}, {sw, port}} {
				must(ip("netns", "exec", end[0], "tc", "qdisc", "add", "dev", end[1], "root", "tbf", "rate", rate, "burst", "256kb", "latency", "50ms"))
			}
		}
	}
	return lab
}

// On returns the command prefix that runs a program on host h.
func (l *Lab) On(h int) []string { return []string{l.ip, "netns", "exec", l.Hosts[h]} }
