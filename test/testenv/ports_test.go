package testenv

import (
	"net"
	"strconv"
	"testing"
)

// The ports handed out are below the ephemeral range, where no outgoing
// connection takes its local port, and distinct when chosen together.
func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	top := firstEphemeralPort()
	if top-lowestPort < 1000 {
		t.Skipf("the ephemeral range starts at %d: ports are the kernel's", top)
	}
	addrs, err := freeAddrs(50)
	if err != nil {
		t.Fatal(err)
	}
	inRange := func(port int) {
		if port < lowestPort || port >= top {
			t.Errorf("port %d is outside %d-%d", port, lowestPort, top-1)
		}
	}
	// freeAddrs holds each port until all are chosen: they are distinct.
	seen := map[string]bool{}
	for _, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		inRange(port)
		if seen[a] {
			t.Errorf("%s handed out twice", a)
		}
		seen[a] = true
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	inRange(port)
}
