package jobauth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	k1, k2 := []byte("secret-one-secret-one-secret-one"), []byte("secret-two-secret-two-secret-two")
	body := []byte("push body")
	good := Sign(k1, "POST", "/push", body, now)
	tests := []struct {
		name   string
		keys   Keys
		proof  string
		method string
		uri    string
		body   []byte
		at     time.Time
		want   error
	}{
		{"valid", Keys{Current: k1}, good, "POST", "/push", body, now, nil},
		{"valid under the previous key", Keys{Current: k2, Previous: k1}, good, "POST", "/push", body, now, nil},
		{"within the window", Keys{Current: k1}, good, "POST", "/push", body, now.Add(MaxSkew), nil},
		{"missing", Keys{Current: k1}, "", "POST", "/push", body, now, ErrMissing},
		{"receiver without a key", Keys{}, good, "POST", "/push", body, now, ErrNoKey},
		{"wrong key", Keys{Current: k2}, good, "POST", "/push", body, now, ErrInvalid},
		{"other body", Keys{Current: k1}, good, "POST", "/push", []byte("push bodY"), now, ErrInvalid},
		{"other path", Keys{Current: k1}, good, "POST", "/layout", body, now, ErrInvalid},
		{"other method", Keys{Current: k1}, good, "GET", "/push", body, now, ErrInvalid},
		{"too old", Keys{Current: k1}, good, "POST", "/push", body, now.Add(MaxSkew + time.Second), ErrExpired},
		{"from the future", Keys{Current: k1}, good, "POST", "/push", body, now.Add(-MaxSkew - time.Second), ErrExpired},
		{"changed timestamp", Keys{Current: k1}, strings.Replace(good, "t=1700000000000", "t=1700000000001", 1), "POST", "/push", body, now, ErrInvalid},
		{"unknown version", Keys{Current: k1}, "v2" + good[2:], "POST", "/push", body, now, ErrInvalid},
		{"garbage", Keys{Current: k1}, "v1 t=x mac=y", "POST", "/push", body, now, ErrInvalid},
		{"short mac", Keys{Current: k1}, "v1 t=1700000000000 mac=abcd", "POST", "/push", body, now, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.keys, tt.proof, tt.method, tt.uri, tt.body, tt.at)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSignFormat(t *testing.T) {
	p := Sign([]byte("k"), "POST", "/push", nil, time.UnixMilli(42))
	if !strings.HasPrefix(p, "v1 t=42 mac=") || len(p) != len("v1 t=42 mac=")+64 {
		t.Fatalf("Sign = %q", p)
	}
}
