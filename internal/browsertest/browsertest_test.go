package browsertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestRecorder(t *testing.T) {
	var served []string
	rec := Record(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		served = append(served, string(b))
	}))
	for _, r := range []*http.Request{
		httptest.NewRequest("GET", "/a?q=1", nil),
		httptest.NewRequest("POST", "/b", strings.NewReader("x=2")),
	} {
		rec.ServeHTTP(httptest.NewRecorder(), r)
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"GET ", []string{"GET /a?q=1 "}},
		{"POST /b", []string{"POST /b x=2"}},
		{"", []string{"GET /a?q=1 ", "POST /b x=2"}},
		{"PUT", nil},
	}
	for _, tt := range tests {
		if got := rec.Requests(tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("Requests(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
	if got, want := rec.All(), "GET /a?q=1 \nPOST /b x=2"; got != want {
		t.Errorf("All() = %q, want %q", got, want)
	}
	if want := []string{"", "x=2"}; !slices.Equal(served, want) {
		t.Errorf("the handler read bodies %q, want %q", served, want)
	}
}
