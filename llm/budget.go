package llm

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// The model budget of a session. One Budget is shared by every client of a
// session (the Planner's and the Navigator's: Config.Budget), which charge
// it with what each response reports and consult it before each request;
// the session reads it to end the run once it is passed. It bounds tokens
// today; a cost limit (prices per model from a registry) is meant to join
// Limits and BudgetError.Budget as another named limit, charged from the
// same Usage.

// MaxTokenBudget is the largest token budget (contract.MaxTaskTokens).
const MaxTokenBudget = contract.MaxTaskTokens

// BudgetTokens names the token budget in a BudgetError: the task's hint
// that sets it (contract.HintMaxTokens).
const BudgetTokens = contract.HintMaxTokens

// ErrBudgetExceeded is matched (errors.Is) by every *BudgetError.
var ErrBudgetExceeded = errors.New("llm: model budget exceeded")

// Limits are the limits of a Budget; a zero field sets no limit.
type Limits struct {
	// MaxTokens bounds the tokens (prompt and completion) of all calls,
	// 0 to MaxTokenBudget.
	MaxTokens int
}

// Budget counts the tokens a session's model calls used and refuses calls
// past its Limits. It is safe for concurrent use; a nil *Budget is no
// budget (it counts nothing and refuses nothing).
type Budget struct {
	limits Limits

	mu   sync.Mutex
	used int // tokens the endpoints reported, over every call
	// bytes and tokens are the prompt sizes in bytes and in reported
	// tokens of the calls that reported usage: their ratio calibrates the
	// estimate of the next prompt (EstimatePromptTokens).
	bytes, tokens int
}

// NewBudget returns a budget with limits, or an error for a limit out of
// range.
func NewBudget(limits Limits) (*Budget, error) {
	if limits.MaxTokens < 0 || limits.MaxTokens > MaxTokenBudget {
		return nil, fmt.Errorf("llm: token budget %d: want 1 to %d (0 for none)", limits.MaxTokens, MaxTokenBudget)
	}
	return &Budget{limits: limits}, nil
}

// Limits returns the budget's limits (zero for a nil budget).
func (b *Budget) Limits() Limits {
	if b == nil {
		return Limits{}
	}
	return b.limits
}

// Tokens returns the tokens used so far.
func (b *Budget) Tokens() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Exceeded returns a *BudgetError when the calls so far used more than a
// limit, else nil.
func (b *Budget) Exceeded() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exceededLocked()
}

// exceededLocked is Exceeded with b.mu held.
func (b *Budget) exceededLocked() error {
	if b.limits.MaxTokens > 0 && b.used > b.limits.MaxTokens {
		return &BudgetError{Budget: BudgetTokens, Limit: b.limits.MaxTokens, Used: b.used}
	}
	return nil
}

// charge adds one response's usage (contract.CallTokens: its total, or
// prompt plus completion when that is more). promptBytes is the
// size of the prompt sent, for the estimate; a prompt that showed images
// does not calibrate it (its reported tokens count the images, which its
// bytes do not).
func (b *Budget) charge(u Usage, promptBytes, images int) {
	if b == nil {
		return
	}
	n := contract.CallTokens(u.PromptTokens, u.CompletionTokens, u.TotalTokens)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used = addTokens(b.used, n)
	if u.PromptTokens > 0 && promptBytes > 0 && images == 0 {
		b.bytes = addTokens(b.bytes, promptBytes)
		b.tokens = addTokens(b.tokens, u.PromptTokens)
	}
}

// addTokens adds without overflowing.
func addTokens(a, n int) int {
	if a > math.MaxInt-n {
		return math.MaxInt
	}
	return a + n
}

// check refuses a call that cannot fit: the budget is passed already, or
// the prompt's estimated size (promptBytes, see EstimatePromptTokens; each
// of its images counted as ImageTokens) plus maxCompletion (the
// completion bound sent with the request, 0 when none) is more than what
// is left.
func (b *Budget) check(promptBytes, images, maxCompletion int) error {
	if b == nil || b.limits.MaxTokens == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.exceededLocked(); err != nil {
		return err
	}
	est := estimateTokens(promptBytes, b.bytes, b.tokens) + images*ImageTokens + max(maxCompletion, 0)
	if left := b.limits.MaxTokens - b.used; est > left {
		return &BudgetError{Budget: BudgetTokens, Limit: b.limits.MaxTokens, Used: b.used, Predicted: est}
	}
	return nil
}

// EstimatePromptTokens estimates the tokens of a prompt of promptBytes
// bytes (the UTF-8 bytes of its messages' roles and contents): in the
// ratio of tokens to bytes the endpoint reported for earlier prompts of
// the same budget, else one token per four bytes, the usual rate of
// English text in BPE tokenizers. It is an estimate: a call it lets
// through may still pass the budget, which Exceeded then reports.
func (b *Budget) EstimatePromptTokens(promptBytes int) int {
	if b == nil {
		return estimateTokens(promptBytes, 0, 0)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return estimateTokens(promptBytes, b.bytes, b.tokens)
}

// bytesPerToken is the default rate of the estimate.
const bytesPerToken = 4

func estimateTokens(promptBytes, seenBytes, seenTokens int) int {
	if promptBytes <= 0 {
		return 0
	}
	if seenBytes > 0 && seenTokens > 0 {
		est := math.Ceil(float64(promptBytes) * float64(seenTokens) / float64(seenBytes))
		return int(min(est, MaxTokenBudget+1)) // past any budget, and no overflow
	}
	return (promptBytes + bytesPerToken - 1) / bytesPerToken
}

// promptBytes is the size of msgs' text for the estimate (images are
// counted apart: ImageTokens).
func promptBytes(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content)
	}
	return n
}

// BudgetError is a call refused, or a session ended, by a budget.
type BudgetError struct {
	// Budget names the limit: BudgetTokens.
	Budget string
	// Limit is the limit and Used what the calls so far used.
	Limit, Used int
	// Predicted, when not 0, says the call was refused before it was
	// sent: the estimate of what it would use (prompt and completion
	// bound), more than Limit - Used.
	Predicted int
}

// Error says which budget, its limit, what was used and, for a refused
// call, what it would have used.
func (e *BudgetError) Error() string {
	if e.Predicted > 0 {
		return fmt.Sprintf("the token budget (%s %s) would be passed: %s tokens used, the next model call is estimated at %s, %s are left",
			e.Budget, text.Thousands(e.Limit), text.Thousands(e.Used), text.Thousands(e.Predicted), text.Thousands(max(e.Limit-e.Used, 0)))
	}
	return fmt.Sprintf("the token budget (%s %s) was passed: %s tokens used", e.Budget, text.Thousands(e.Limit), text.Thousands(e.Used))
}

// Is matches ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }
