// Package jobauth proves that a request between the jobs of a pipeline (a push, a layout
// notification, a stats read) comes from a job of that pipeline: the sender signs it with the
// pipeline's transport secret (ytstore.Store.TransportSecret) and the receiver checks the
// signature.
//
// The proof travels in the Header header as
//
//	v1 t=<unix milliseconds> mac=<hex HMAC-SHA256>
//
// where the MAC, keyed with the secret, covers
//
//	"yt-flow-transport/v1\n" + METHOD + "\n" + request URI + "\n" + t + "\n" + body
//
// (the request URI is the path with its query, as http.Request.URL.RequestURI gives it).
// A proof older or newer than MaxSkew is refused. Within that window a captured request can
// be sent again: the transport makes that harmless (a push is deduplicated by message id, a
// layout notification only wakes a poll, a stats read changes nothing), so no nonce is kept.
//
// Sign and Verify are pure: the time is an argument.
package jobauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Header is the HTTP header that carries the proof.
const Header = "X-Yt-Flow-Proof"

// MaxSkew bounds how far the proof's timestamp may be from the receiver's clock, both ways.
const MaxSkew = 5 * time.Minute

// SecretSize is the length in bytes of a secret NewSecret makes.
const SecretSize = 32

// Keys are the secrets a receiver accepts: the current one, and the one it replaced (empty
// when none), so that a sender that has not read the rotated secret yet is still accepted.
// Senders sign with Current.
type Keys struct {
	Current, Previous []byte
}

// Errors of Verify.
var (
	// ErrMissing: the request carries no proof.
	ErrMissing = errors.New("no transport proof")
	// ErrInvalid: the proof is malformed or its MAC matches no key.
	ErrInvalid = errors.New("invalid transport proof")
	// ErrExpired: the proof's timestamp is more than MaxSkew away from now.
	ErrExpired = errors.New("transport proof outside the accepted time window")
	// ErrNoKey: the receiver has no secret to check against (not read yet).
	ErrNoKey = errors.New("no transport secret known")
)

// NewSecret reads a fresh secret of SecretSize bytes from rand (crypto/rand.Reader).
func NewSecret(rand io.Reader) ([]byte, error) {
	b := make([]byte, SecretSize)
	if _, err := io.ReadFull(rand, b); err != nil {
		return nil, fmt.Errorf("jobauth: new secret: %w", err)
	}
	return b, nil
}

// Sign returns the Header value proving a request of method to uri with body, sent at now.
func Sign(secret []byte, method, uri string, body []byte, now time.Time) string {
	t := strconv.FormatInt(now.UnixMilli(), 10)
	return "v1 t=" + t + " mac=" + hex.EncodeToString(mac(secret, method, uri, t, body))
}

// Verify checks proof (the Header value, "" when absent) of a request of method to uri with
// body, received at now, against keys. It returns nil, or an error that is one of ErrMissing,
// ErrInvalid, ErrExpired, ErrNoKey (possibly wrapped).
func Verify(keys Keys, proof, method, uri string, body []byte, now time.Time) error {
	if proof == "" {
		return ErrMissing
	}
	if len(keys.Current) == 0 {
		return ErrNoKey
	}
	rest, ok := strings.CutPrefix(proof, "v1 t=")
	if !ok {
		return fmt.Errorf("%w: unknown version", ErrInvalid)
	}
	t, macHex, ok := strings.Cut(rest, " mac=")
	if !ok {
		return fmt.Errorf("%w: no mac", ErrInvalid)
	}
	ms, err := strconv.ParseInt(t, 10, 64)
	if err != nil || ms < 0 {
		return fmt.Errorf("%w: bad timestamp", ErrInvalid)
	}
	got, err := hex.DecodeString(macHex)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: bad mac", ErrInvalid)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("%w: sent %s from now", ErrExpired, d.Round(time.Second))
	}
	for _, k := range [][]byte{keys.Current, keys.Previous} {
		if len(k) > 0 && hmac.Equal(got, mac(k, method, uri, t, body)) {
			return nil
		}
	}
	return fmt.Errorf("%w: mac matches no key", ErrInvalid)
}

func mac(secret []byte, method, uri, t string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	_, _ = io.WriteString(h, "yt-flow-transport/v1\n"+method+"\n"+uri+"\n"+t+"\n")
	_, _ = h.Write(body)
	return h.Sum(nil)
}
