// Package nativehost is the aegis native messaging host: the process
// Chrome starts when the aegis extension connects, which runs governed
// sessions on the person's tab through the extension.
//
// The package is one small file per concern:
//
//   - frame.go: Chrome's framing (a 4-byte little-endian length, then UTF-8
//     JSON), with a cap on inbound frames checked before anything is
//     allocated (default 64 MiB, Chrome's own) and a refusal of outbound
//     frames over 1 MiB (Chrome would kill the host).
//   - protocol.go: the versioned message protocol (requests, responses and
//     events with ids) and its append-only error codes; PROTOCOL.md is its
//     specification.
//   - conn.go: one end of a conversation: calls matched to their answers,
//     and a refusal of anything else (a result for a request never sent).
//   - origin.go: the caller's origin (Chrome's first argument) checked
//     against the allowed_origins of the installed host manifest.
//   - host.go: host mode: the session loop on the person's tab, approvals
//     asked of the person through the popup, and the end of everything
//     (session aborted, evidence sealed, exit) when the extension
//     disconnects.
//   - manifest.go and install_*.go: writing and removing the host manifest
//     where each browser looks for it (Linux, macOS; the Windows registry
//     behind build tags).
//   - config.go: the host's configuration file (0600): model settings and
//     secrets, which never live in the extension; errors that name the
//     member and what it should hold.
//   - settings.go: config.get and config.set, the options page's model
//     settings (the API key write-only).
//   - results.go: what the popup shows besides the steps: thumbnails of
//     the evidence's screenshots, the values an approval would submit,
//     the result panel's data.
//
// stdout carries frames and nothing else: the host logs to stderr (which
// Chrome forwards to its own log) or to a log file.
//
// The extension is trusted with nothing the policy did not allow: every
// message is parsed strictly, every action the extension runs was allowed
// by the gate first, a response is accepted only for a request in flight,
// and an approval only for the exact action hash pending.
package nativehost
