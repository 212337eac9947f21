package inproc

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// answer is a Server that answers with its body, or declines once closed.
type answer struct {
	body   string
	closed bool
}

func (a *answer) Serve(req *http.Request) (*http.Response, bool) {
	if a.closed {
		return nil, false
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(a.body)), Request: req}, true
}

// network is the transport underneath: it records the hosts it was asked for.
type network struct{ hosts []string }

var errNetwork = errors.New("went over the network")

func (n *network) RoundTrip(req *http.Request) (*http.Response, error) {
	n.hosts = append(n.hosts, req.URL.Host)
	return nil, errNetwork
}

func get(t *testing.T, tr http.RoundTripper, url string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	return string(b), err
}

func TestTransportServesRegisteredHostsInProcess(t *testing.T) {
	net := &network{}
	tr := Transport{Base: net}
	srv := &answer{body: "hello"}
	unregister := Register("127.0.0.1:1", srv)
	defer unregister()

	before := Served()
	body, err := get(t, tr, "http://127.0.0.1:1/api/v4/get")
	if err != nil || body != "hello" {
		t.Fatalf("registered host: %q, %v; want the server's answer", body, err)
	}
	if Served() != before+1 {
		t.Errorf("Served() = %d, want %d", Served(), before+1)
	}
	if _, err := get(t, tr, "http://127.0.0.1:2/api/v4/get"); !errors.Is(err, errNetwork) {
		t.Errorf("other host: %v, want the network's answer", err)
	}

	// A server that no longer serves (closing) sends its requests back to the network.
	srv.closed = true
	if _, err := get(t, tr, "http://127.0.0.1:1/api/v4/get"); !errors.Is(err, errNetwork) {
		t.Errorf("closing server: %v, want the network's answer", err)
	}
	srv.closed = false

	unregister()
	if _, ok := Lookup("127.0.0.1:1"); ok {
		t.Error("Lookup finds an unregistered server")
	}
	if _, err := get(t, tr, "http://127.0.0.1:1/api/v4/get"); !errors.Is(err, errNetwork) {
		t.Errorf("unregistered host: %v, want the network's answer", err)
	}
	if want := []string{"127.0.0.1:2", "127.0.0.1:1", "127.0.0.1:1"}; strings.Join(net.hosts, ",") != strings.Join(want, ",") {
		t.Errorf("network saw %v, want %v", net.hosts, want)
	}
}

func TestUnregisterLeavesANewerRegistration(t *testing.T) {
	old, cur := &answer{body: "old"}, &answer{body: "new"}
	unregisterOld := Register("127.0.0.1:3", old)
	unregisterCur := Register("127.0.0.1:3", cur) // the address was taken over
	defer unregisterCur()
	unregisterOld()
	s, ok := Lookup("127.0.0.1:3")
	if !ok || s != cur {
		t.Fatalf("Lookup after the old server unregistered: %v, %v; want the new one", s, ok)
	}
}
