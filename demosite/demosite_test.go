package demosite

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-s.Done()
	})
	return s
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestPages(t *testing.T) {
	s := start(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/", 200, "Aegis Demo Shop"},
		{"/login", 200, `type="password"`},
		{"/account", 200, "Not signed in"},
		{"/form", 200, `<select id="shipping"`},
		{"/orders", 200, "<caption>Orders</caption>"},
		{"/long", 200, "Section 60"},
		{"/shadow", 200, "attachShadow({mode: 'open'})"},
		{"/frame", 200, `src="/frame/inner"`},
		{"/frame/inner", 200, "Subscribe"},
		{"/widgets", 200, "Covered action"},
		{"/external", 200, ExternalOrigin},
		{"/hostile", 200, "IGNORE PREVIOUS INSTRUCTIONS"},
		{"/slow?ms=10", 200, "Slow page loaded"},
		{"/big?n=10", 200, "10 items."},
		{"/go-external", 302, ""},
		{"/nope", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, body := get(t, noRedirect, s.URL()+tt.path)
			if got != tt.wantStatus {
				t.Errorf("status = %d, want %d", got, tt.wantStatus)
			}
			if !strings.Contains(body, tt.wantBody) {
				t.Errorf("body does not contain %q", tt.wantBody)
			}
		})
	}
}

func TestLoginFlow(t *testing.T) {
	s := start(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(s.URL()+"/login", url.Values{"username": {"alice"}, "password": {"hunter2-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := string(b), "Signed in as alice"; !strings.Contains(got, want) {
		t.Fatalf("after login, page does not say %q", want)
	}
	if strings.Contains(string(b), "hunter2-secret") {
		t.Fatal("the password is echoed")
	}
	resp, err = c.PostForm(s.URL()+"/login", url.Values{"username": {"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("login without password: status %d, want 422", resp.StatusCode)
	}
}

func TestOrder(t *testing.T) {
	s := start(t)
	for i, want := range []string{"A-1001", "A-1002"} {
		resp, err := http.PostForm(s.URL()+"/form", url.Values{"name": {"Ada"}, "shipping": {"express"}, "gift": {"yes"}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range []string{"Thank you, Ada!", want, "Shipping: Express", "Gift wrap: yes"} {
			if !strings.Contains(string(b), w) {
				t.Errorf("order %d: confirmation lacks %q", i, w)
			}
		}
	}
}

func TestBounds(t *testing.T) {
	s := start(t)
	_, body := get(t, http.DefaultClient, s.URL()+"/big?n=999999999")
	if got := strings.Count(body, "<button") + strings.Count(body, "<a href=\"#item") + strings.Count(body, "<input") + strings.Count(body, `role="button"`); got != MaxBig {
		t.Errorf("/big renders %d elements, want MaxBig=%d", got, MaxBig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/slow?ms=999999999", nil)
	start := time.Now()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("slow page answered before the client gave up")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("client waited %v", d)
	}
}

func TestStartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL() = %q", s.URL())
	}
	cancel()
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop when its context ended")
	}
}
