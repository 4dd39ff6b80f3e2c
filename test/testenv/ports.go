package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports for test servers are taken below the kernel's ephemeral range: a port
// the kernel picks for ":0" comes from the range it also gives outgoing
// connections their local ports from, so between the choice and the server's
// listen a client's connection could take it (seen: kueue-guard's probe port,
// "bind: address already in use", while the bench harness's clients were
// connecting). A port below the range is taken only by another listener.
const (
	lowestPort      = 10000
	ephemeralRanges = "/proc/sys/net/ipv4/ip_local_port_range"
	// defaultEphemeral is Linux's default first ephemeral port.
	defaultEphemeral = 32768
	portTries        = 200
)

// firstEphemeralPort is the kernel's first ephemeral port.
func firstEphemeralPort() int {
	raw, err := os.ReadFile(ephemeralRanges)
	if err != nil {
		return defaultEphemeral
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return defaultEphemeral
	}
	first, err := strconv.Atoi(fields[0])
	if err != nil {
		return defaultEphemeral
	}
	return first
}

// listenFree listens on a loopback port nothing listens on, below the
// ephemeral range when the range leaves room for it, else on one the kernel
// picks.
func listenFree() (net.Listener, error) {
	if top := firstEphemeralPort(); top-lowestPort >= 1000 {
		for range portTries {
			port := lowestPort + rand.IntN(top-lowestPort) //nolint:gosec // a port number, not a secret
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				return l, nil
			}
		}
		return nil, fmt.Errorf("no free loopback port in %d-%d after %d tries", lowestPort, top-1, portTries)
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// freeAddrs are n distinct loopback addresses nothing listens on: each port is
// held until all are chosen, so that one is never chosen twice.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		l, err := listenFree()
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// FreePort is a loopback port nothing listens on right now.
func FreePort() (int, error) {
	l, err := listenFree()
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
