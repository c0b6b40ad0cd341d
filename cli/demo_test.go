package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDemoServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"demo", "--serve", "127.0.0.1:0"}, Stdio{Out: pw, Err: &errb})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read URL: %v", err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "aegis demo site: "))
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the site's URL", line)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	resp, err := http.Get(url + "login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `type="password"`) {
		t.Errorf("GET /login does not serve the sign-in form")
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit code %d after interrupt, want 0 (stderr %q)", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demo did not stop when interrupted")
	}
}

func TestDemoUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"demo"}, ExitUsage},
		{[]string{"demo", "extra"}, ExitUsage},
		{[]string{"demo", "--bogus"}, ExitUsage},
		{[]string{"demo", "-h"}, ExitOK},
		{[]string{"demo", "--serve", "256.0.0.1:bad"}, ExitFailure},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if got := Run(context.Background(), tt.args, Stdio{Out: &out, Err: &errb}); got != tt.want {
			t.Errorf("aegis %v = %d, want %d (stderr %q)", tt.args, got, tt.want, errb.String())
		}
	}
}
