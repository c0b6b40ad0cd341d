package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
)

func TestPAE(t *testing.T) {
	// The DSSE protocol's own example.
	got := string(PAE("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := string(PAE("", nil)), "DSSEv1 0  0 "; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestKeyFiles(t *testing.T) {
	pub, priv, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := MarshalPrivateKey(priv)
	pb, _ := MarshalPublicKey(pub)
	priv2, err := ParsePrivateKey(kb)
	if err != nil || !priv2.Equal(priv) {
		t.Fatalf("private key round trip: %v", err)
	}
	pub2, err := ParsePublicKey(pb)
	if err != nil || !pub2.Equal(pub) {
		t.Fatalf("public key round trip: %v", err)
	}
	pub3, err := ParsePublicKey([]byte(KeyID(pub) + "\n"))
	if err != nil || !pub3.Equal(pub) {
		t.Fatalf("key id as a public key: %v", err)
	}
	for _, bad := range []string{"", "junk", string(kb), KeyIDPrefix + "00", strings.ToUpper(KeyID(pub))} {
		if _, err := ParsePublicKey([]byte(bad)); err == nil {
			t.Errorf("public key %q accepted", bad)
		}
	}
	if _, err := ParsePrivateKey(pb); err == nil {
		t.Error("a public key parsed as a private key")
	}
}

// TestSealSignature: the signature verifies, and fails for a bad
// signature, the wrong key, a tampered payload, a payload type changed, a
// second signature, and a keyid that lies.
func TestSealSignature(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true})
	ctx := context.Background()
	r, err := Verify(ctx, dir, VerifyOptions{PubKey: testPub()})
	if err != nil || !r.Authenticated || r.Signer != KeyID(testPub()) {
		t.Fatalf("good signature: %v %+v", err, r)
	}
	if r, err := Verify(ctx, dir, VerifyOptions{}); err != nil || r.Authenticated || r.Signer == "" {
		t.Fatalf("without a trusted key: %v %+v", err, r)
	}
	otherPub, otherPriv, _ := GenerateKey(nil)
	_, err = Verify(ctx, dir, VerifyOptions{PubKey: otherPub})
	mustFail(t, "wrong key", err, FileSeal, "not by the trusted key")

	sealPath := filepath.Join(dir, filepath.FromSlash(FileSeal))
	orig, _ := os.ReadFile(sealPath)
	var env Envelope
	if err := jsonUnmarshal(orig, &env); err != nil {
		t.Fatal(err)
	}
	manifest, _ := base64.StdEncoding.DecodeString(env.Payload)
	resign := func(payloadType string, payload []byte, key ed25519.PrivateKey) string {
		return base64.StdEncoding.EncodeToString(ed25519.Sign(key, PAE(payloadType, payload)))
	}
	tests := []struct {
		name   string
		change func(e *Envelope)
		want   string
	}{
		{"bad signature", func(e *Envelope) {
			s, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
			s[10] ^= 1
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(s)
		}, "does not verify"},
		{"signed by another key, keyid kept", func(e *Envelope) { e.Signatures[0].Sig = resign(SealPayloadType, manifest, otherPriv) }, "does not verify"},
		{"signed by another key, keyid too", func(e *Envelope) {
			e.Signatures[0].Sig = resign(SealPayloadType, manifest, otherPriv)
			e.Signatures[0].KeyID = KeyID(otherPub)
		}, "but the manifest names signer"},
		{"tampered payload, re-signed", func(e *Envelope) {
			p := bytes.Replace(manifest, []byte(`"completed"`), []byte(`"aborted"`), 1)
			e.Payload = base64.StdEncoding.EncodeToString(p)
			e.Signatures[0].Sig = resign(SealPayloadType, p, testKey())
		}, "not the sealed manifest"},
		{"payload type changed", func(e *Envelope) { e.PayloadType = "application/json" }, "payloadType"},
		{"payload type changed, re-signed", func(e *Envelope) {
			e.PayloadType = "application/json"
			e.Signatures[0].Sig = resign("application/json", manifest, testKey())
		}, "payloadType"},
		{"two signatures", func(e *Envelope) { e.Signatures = append(e.Signatures, e.Signatures[0]) }, "2 signatures"},
		{"no signature", func(e *Envelope) { e.Signatures = nil }, "0 signatures"},
		{"base64 with a line feed", func(e *Envelope) { e.Signatures[0].Sig = e.Signatures[0].Sig[:20] + "\n" + e.Signatures[0].Sig[20:] }, "sig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env
			e.Signatures = append([]EnvelopeSignature(nil), env.Signatures...)
			tt.change(&e)
			b, err := canonjson.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(sealPath, append(b, '\n'), 0o644)
			defer os.WriteFile(sealPath, orig, 0o644)
			for _, pub := range []ed25519.PublicKey{nil, testPub()} {
				_, err := Verify(ctx, dir, VerifyOptions{PubKey: pub})
				mustFail(t, tt.name, err, FileSeal, tt.want)
			}
		})
	}
	// An unsigned bundle fails against a trusted key.
	unsigned := buildBundle(t, t.TempDir(), fixture{})
	_, err = Verify(ctx, unsigned, VerifyOptions{PubKey: testPub()})
	mustFail(t, "unsigned", err, FileSeal, "not signed")
}

func mustFail(t *testing.T, name string, err error, file, want string) {
	t.Helper()
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.File != file || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: got %v, want a VerifyError on %s containing %q", name, err, file, want)
	}
}
