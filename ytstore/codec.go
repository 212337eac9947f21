package ytstore

import (
	"net"
	"net/url"
	"strings"

	"go.ytsaurus.tech/yt/go/yt"
)

// codecFor picks the request/response compression for a proxy address. Over loopback
// (ytlocal on the same machine) compression only costs CPU on both ends — the SDK's block
// codecs build a new zstd encoder per block — so it is off; anywhere else the SDK default
// (zstd) is kept.
func codecFor(proxy string) yt.ClientCompressionCodec {
	if isLoopback(proxy) {
		return yt.ClientCodecNone
	}
	return yt.ClientCodecDefault
}

func isLoopback(proxy string) bool {
	host := proxy
	if strings.Contains(host, "://") {
		if u, err := url.Parse(host); err == nil {
			host = u.Host
		}
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
