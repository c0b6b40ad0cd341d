// Package audit holds the auditor's tools over an evidence bundle: Replay
// re-executes a recorded session without any model and compares what it
// sees with the record, Report renders a bundle as one self-contained HTML
// file, and PolicyDiff re-evaluates every recorded decision under another
// policy.
//
// The three share one reader (Open): it verifies the bundle first (a
// tampered bundle is refused, or for Report only shown up to the place of
// the tampering), then reads the ledger in order and groups its records
// into steps, one per proposed action: the decisions about it, the executed
// action and its result, the effects it caused (the requests and
// navigations the page made while or after it ran, each with the decisions
// about it: Step.Effects), the observations that followed, the events and
// artifacts. One package rather than three because the reader, the step
// model and the rebuilding of the gate's inputs (Reconstruct) are what all
// three are made of.
//
// # Re-evaluating a decision
//
// A decision record keeps what the gate judged beside its answer: the
// action's id and hash, the target element the driver resolved for it (as
// the gate saw it), the step index, the evaluation time, the decision log
// id, the permission level applied and the governed exceptions. The gate
// request is rebuilt from it (Reconstruct), and from the rest of the
// bundle for what the decision does not hold:
//
//   - the action: from actions.jsonl. An action that was denied (or paused
//     and then refused) was never executed, and the bundle does not keep its
//     content, only its hash: such a decision cannot be re-evaluated, and
//     PolicyDiff lists it as such.
//   - the target element: the decision's target. A bundle written before
//     targets were recorded has none: its decisions about an action on an
//     element (click, type, select, an extract of an element) cannot be
//     re-evaluated (ErrNoTarget), and PolicyDiff lists them, saying the
//     bundle predates target recording. Its other decisions are judged
//     again as usual, and such a bundle still verifies and replays.
//   - the active URL: the URL of the last observation or action result
//     before the decision, as the session tracks it (about:blank first).
//   - the allowlist: the task's urls in the manifest; the step budget: the
//     policyContext of the observations (else task.maxActions, else 50).
//   - the session's permission: the level the decision record says was
//     applied (the preset's name is not recorded); its blocked domains and
//     sensitive selectors are not recorded either.
//
// The action hash of every decision commits to the action, the active URL,
// the session id and the target, so a reconstruction is checked: when the
// hash it yields equals the recorded one, the inputs the hash covers are
// exactly those the gate saw (Reconstruction.Exact). The hash of a type
// action with redact true is keyed by the gate that judged it (its text is
// masked in the bundle) and cannot be recomputed: such a reconstruction is
// never exact, and a replay types the recorded placeholder.
//
// PolicyDiff judges again the effects the gate judged (the action's
// reconstructed request with the effect, at the effect's recorded time);
// those the browser boundary refused before any policy saw them are not
// judged again. A replay does not replay effects: it runs the actions
// again, and the page's effects happen again.
//
// A replay judges each action again on the live page: the target is the
// element the driver resolves there now, compared with the recorded one.
package audit
