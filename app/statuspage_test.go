package app

import (
	"net"
	"strings"
	"testing"
)

// TestListenStatus: --status-listen without a host binds loopback; a bad address is an
// error naming the flag.
func TestListenStatus(t *testing.T) {
	for _, addr := range []string{"0", ":0", "127.0.0.1:0"} {
		ln, err := listenStatus(addr)
		if err != nil {
			t.Fatalf("listenStatus(%q): %v", addr, err)
		}
		ip := ln.Addr().(*net.TCPAddr).IP
		ln.Close()
		if !ip.IsLoopback() {
			t.Errorf("listenStatus(%q) bound %v, want loopback", addr, ip)
		}
	}
	if _, err := listenStatus("127.0.0.1:x:y"); err == nil || !strings.Contains(err.Error(), "--status-listen") {
		t.Errorf("bad address: %v", err)
	}
}

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{
		"http://flow.example.com:8080/": "flow.example.com", "https://flow.example.com/x": "flow.example.com",
		"host:80": "host", "host/pid:12": "host", "http://[::1]:80/": "::1",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}
