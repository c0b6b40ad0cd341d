package nativehost_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// shared holds what the whole test binary shares: one gate (the policy is
// compiled once) and the aegis binary built for the end-to-end tests.
var shared struct {
	gateOnce  sync.Once
	g         *gate.Gate
	approvals *gate.Approvals
	gateErr   error

	binDir string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aegis-host-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	shared.binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// aegisBinary builds cmd/aegis once into the test binary's temporary
// directory.
func aegisBinary(t testing.TB) string {
	return nativehosttest.Build(t, shared.binDir)
}

func testGate(t testing.TB) (*gate.Gate, *gate.Approvals) {
	t.Helper()
	shared.gateOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shared.approvals = gate.NewApprovals()
		shared.g, shared.gateErr = gate.New(ctx, gate.Options{Approvals: shared.approvals})
	})
	if shared.gateErr != nil {
		t.Fatalf("load the policy: %v", shared.gateErr)
	}
	return shared.g, shared.approvals
}
