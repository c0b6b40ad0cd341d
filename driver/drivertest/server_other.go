//go:build !unix

package drivertest

import "testing"

// Server is a Playwright server a test started (unix only).
type Server struct {
	// Endpoint is its ws:// address.
	Endpoint string
}

// RunServer skips the test: the server's browser registry layout and
// its process group are unix's.
func RunServer(t *testing.T) *Server {
	t.Helper()
	t.Skip("RunServer needs unix")
	return nil
}

// Kill does nothing.
func (s *Server) Kill() {}
