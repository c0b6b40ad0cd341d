// Package live serves the live channel of running sessions: a WebSocket
// stream of each session's events (seed 003's ComputerUseStreamEvent, the
// same events, in the same order, that the evidence writes to
// events.jsonl), control requests in (seed 003's ComputerUseControlRequest:
// abort, and the decision on a pending approval), the bundle's gate
// decisions to the clients that ask for them (frames of type
// DecisionFrame, carrying the stepIndex every surface numbers steps by),
// and a small embedded web console that shows the steps with their
// screenshots and asks for approvals.
//
// The server is a watcher and never holds a session up: it reads events
// from the session's Bus, which never blocks its publisher, and a client
// that cannot keep up is dropped. Every connection must present the
// server's bearer token; browsers must come from the server's own origin.
// PROTOCOL.md documents the wire: endpoints, authentication, the error
// codes, and the limits.
package live
