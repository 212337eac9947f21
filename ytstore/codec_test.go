package ytstore

import (
	"testing"

	"go.ytsaurus.tech/yt/go/yt"
)

func TestCodecForLoopbackOnly(t *testing.T) {
	for proxy, want := range map[string]yt.ClientCompressionCodec{
		"127.0.0.1:8000":            yt.ClientCodecNone,
		"localhost:8000":            yt.ClientCodecNone,
		"http://127.0.0.1:8000":     yt.ClientCodecNone,
		"[::1]:8000":                yt.ClientCodecNone,
		"hahn":                      yt.ClientCodecDefault,
		"proxy.example.com:80":      yt.ClientCodecDefault,
		"https://proxy.example.com": yt.ClientCodecDefault,
		"10.0.0.5:8000":             yt.ClientCodecDefault,
	} {
		if got := codecFor(proxy); got != want {
			t.Errorf("codecFor(%q) = %v, want %v", proxy, got, want)
		}
	}
}
