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
// (Limits.MaxTokens) and money (Limits.MaxCostUSD, priced per model by
// Limits.Prices, which come from the model registry), both charged from
// the same Usage.

// MaxTokenBudget is the largest token budget (contract.MaxTaskTokens).
const MaxTokenBudget = contract.MaxTaskTokens

// BudgetTokens names the token budget in a BudgetError: the task's hint
// that sets it (contract.HintMaxTokens).
const BudgetTokens = contract.HintMaxTokens

// BudgetCost names the cost budget in a BudgetError: the task's hint that
// sets it (contract.HintMaxCostUSD).
const BudgetCost = contract.HintMaxCostUSD

// MaxCostBudget is the largest cost budget in US dollars
// (contract.MaxTaskCostUSD).
const MaxCostBudget = contract.MaxTaskCostUSD

// MaxPricePerMTok bounds a price (contract.MaxPricePerMTokUSD).
const MaxPricePerMTok = contract.MaxPricePerMTokUSD

// Price is what a model costs, in US dollars per million tokens (0 for a
// local model): the registry's prices, as the manifest records them.
type Price = contract.ModelPrices

// ErrBudgetExceeded is matched (errors.Is) by every *BudgetError.
var ErrBudgetExceeded = errors.New("llm: model budget exceeded")

// Limits are the limits of a Budget; a zero field sets no limit.
type Limits struct {
	// MaxTokens bounds the tokens (prompt and completion) of all calls,
	// 0 to MaxTokenBudget.
	MaxTokens int
	// MaxCostUSD bounds what all calls cost in US dollars, 0 to
	// MaxCostBudget. A call of a model without a price is refused under
	// it (ErrUnpriced): its cost could not be counted.
	MaxCostUSD float64
	// Prices are the models' prices by model name (the name a client's
	// Config.Model sends; the Planner and the Navigator may share one).
	// A priced model's calls are costed even without MaxCostUSD; with
	// it, a call of a model without a price is refused.
	Prices map[string]Price
}

// Budget counts the tokens a session's model calls used, and what they
// cost, and refuses calls past its Limits. It is safe for concurrent use; a nil *Budget is no
// budget (it counts nothing and refuses nothing).
type Budget struct {
	limits Limits

	mu   sync.Mutex
	used int     // tokens the endpoints reported, over every call
	cost float64 // what they cost in US dollars (Limits.Prices)
	// bytes and tokens are the prompt sizes in bytes and in reported
	// tokens of the calls that reported usage: their ratio calibrates the
	// estimate of the next prompt (EstimatePromptTokens).
	bytes, tokens int
	// reserved and reservedCost are what the calls in flight hold
	// (reserve): counted as used by the next call's check.
	reserved     int
	reservedCost float64
}

// NewBudget returns a budget with limits, or an error for a limit out of
// range.
func NewBudget(limits Limits) (*Budget, error) {
	if limits.MaxTokens < 0 || limits.MaxTokens > MaxTokenBudget {
		return nil, fmt.Errorf("llm: token budget %d: want 1 to %d (0 for none)", limits.MaxTokens, MaxTokenBudget)
	}
	if !(limits.MaxCostUSD >= 0) || limits.MaxCostUSD > MaxCostBudget {
		return nil, fmt.Errorf("llm: cost budget %v: want more than 0 and at most %d US dollars (0 for none)", limits.MaxCostUSD, MaxCostBudget)
	}
	prices := make(map[string]Price, len(limits.Prices))
	for name, p := range limits.Prices {
		if !validPrice(p.InputPerMTok) || !validPrice(p.OutputPerMTok) {
			return nil, fmt.Errorf("llm: price of model %q (%v, %v per million tokens): want 0 to %d US dollars", name, p.InputPerMTok, p.OutputPerMTok, MaxPricePerMTok)
		}
		prices[name] = p
	}
	limits.Prices = prices
	return &Budget{limits: limits}, nil
}

func validPrice(usd float64) bool { return usd >= 0 && usd <= MaxPricePerMTok }

// Price returns the price of model, and whether the budget has one.
func (b *Budget) Price(model string) (Price, bool) {
	if b == nil {
		return Price{}, false
	}
	p, ok := b.limits.Prices[model]
	return p, ok
}

// Priced reports whether the budget costs calls: it has a cost limit or
// prices.
func (b *Budget) Priced() bool {
	return b != nil && (b.limits.MaxCostUSD > 0 || len(b.limits.Prices) > 0)
}

// Limits returns the budget's limits (zero for a nil budget). Its Prices
// are the budget's own: do not change them.
func (b *Budget) Limits() Limits {
	if b == nil {
		return Limits{}
	}
	return b.limits
}

// CostUSD returns what the calls so far cost, in US dollars (0 without
// prices).
func (b *Budget) CostUSD() float64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cost
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
	if b.limits.MaxCostUSD > 0 && b.cost > b.limits.MaxCostUSD {
		return &BudgetError{Budget: BudgetCost, LimitUSD: b.limits.MaxCostUSD, UsedUSD: b.cost}
	}
	return nil
}

// reservation is what reserve set aside for one attempt of a call: the
// prompt's size and estimate, the completion bound sent with it, and, under
// a limit, the tokens and money held for it until charge or release.
type reservation struct {
	model               string
	promptBytes, images int
	// prompt is the prompt's estimate (estimateLocked) and bound the
	// completion bound sent (max_completion_tokens, 0 for none).
	prompt, bound int
	// tokens and cost are held against the limits while the call is in
	// flight (0 without a limit).
	tokens int
	cost   float64
}

// DefaultCompletionBound is the completion bound a budget with a limit
// sends when the client sets none: enough for any Planner or Navigator
// answer.
const DefaultCompletionBound = 4096

// reserve makes, under one lock, everything the budget decides before an
// attempt of a call of model whose prompt is promptBytes bytes with images
// images: the prompt's estimate (estimateLocked); the completion bound to
// send (max_completion_tokens), configured when it is set
// (Config.MaxTokens), else, under a token or cost limit,
// DefaultCompletionBound or less, what is left of the limits after the
// prompt's estimate, else none; and the check. It refuses a call that
// cannot fit: the budget is passed already, or the prompt's estimate plus
// the bound is more than the tokens left, or costs more than the money
// left (under a cost limit, a model without a price is refused:
// ErrUnpriced, its cost cannot be counted). What is left is what the calls
// so far used less what the calls in flight hold: a call it lets through
// holds its prompt's estimate and bound until charge (or release) counts
// it, so that clients sharing a budget cannot pass it together. Without a
// bound a call could use any number of completion tokens, and the
// prediction would see only the prompt.
func (b *Budget) reserve(model string, configured, promptBytes, images int) (reservation, error) {
	r := reservation{model: model, promptBytes: promptBytes, images: images, bound: max(configured, 0)}
	if b == nil {
		return r, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r.prompt = b.estimateLocked(promptBytes, images)
	if b.limits.MaxTokens == 0 && b.limits.MaxCostUSD == 0 {
		return r, nil
	}
	if err := b.exceededLocked(); err != nil {
		return r, err
	}
	tokensLeft := b.limits.MaxTokens - addTokens(b.used, b.reserved)
	costLeft := b.limits.MaxCostUSD - b.cost - b.reservedCost
	p, priced := b.limits.Prices[model]
	if r.bound == 0 {
		n := DefaultCompletionBound
		if b.limits.MaxTokens > 0 {
			n = min(n, tokensLeft-r.prompt)
		}
		if priced && b.limits.MaxCostUSD > 0 && p.OutputPerMTok > 0 {
			left := costLeft - p.Cost(r.prompt, 0)
			n = min(n, int(math.Floor(max(left, 0)/p.OutputPerMTok*1e6)))
		}
		r.bound = max(n, 1) // a prompt that leaves nothing is refused below
	}
	est := addTokens(r.prompt, r.bound)
	if b.limits.MaxTokens > 0 && est > tokensLeft {
		return r, &BudgetError{Budget: BudgetTokens, Limit: b.limits.MaxTokens, Used: b.used, Held: b.reserved, Predicted: est}
	}
	estUSD := 0.0
	if b.limits.MaxCostUSD > 0 {
		if !priced {
			return r, fmt.Errorf("%w: the cost budget has no price for model %q: add the model's prices to the model registry", ErrUnpriced, model)
		}
		if estUSD = p.Cost(r.prompt, r.bound); estUSD > costLeft {
			return r, &BudgetError{Budget: BudgetCost, LimitUSD: b.limits.MaxCostUSD, UsedUSD: b.cost, HeldUSD: b.reservedCost, PredictedUSD: estUSD}
		}
	}
	r.tokens, r.cost = est, estUSD
	b.reserved = addTokens(b.reserved, r.tokens)
	b.reservedCost += r.cost
	return r, nil
}

// release gives back what r holds: its attempt failed, and nothing of it
// is charged.
func (b *Budget) release(r reservation) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(r)
}

// releaseLocked is release with b.mu held.
func (b *Budget) releaseLocked(r reservation) {
	b.reserved = max(b.reserved-r.tokens, 0)
	b.reservedCost = max(b.reservedCost-r.cost, 0)
	if b.reserved == 0 {
		b.reservedCost = 0 // no rounding left over
	}
}

// charge gives back what r holds and adds the answer's usage
// (contract.CallTokens: its total, or prompt plus completion when that is
// more) and, when the budget has a price for r's model, its cost, which it
// returns (0 when unpriced). completionBytes is the size of the answer's
// text. A prompt that showed images does not calibrate the estimate (its
// reported tokens count the images, which its bytes do not).
//
// It fails closed on what the endpoint omits, so that a broken or hostile
// endpoint cannot make calls free: an answer that reports no usage at all
// is charged the prompt's estimate (r's) plus, as its completion, the
// bound sent with it when there was one (the model may have spent up to
// it), else the answer's bytes at the calibrated rate; the tokens of a
// total beyond prompt plus completion (all of it, when only a total is
// reported) are costed at the dearer of the model's two prices. An answer
// that reports no prompt tokens is charged at least the prompt's estimate
// plus its completion tokens.
func (b *Budget) charge(r reservation, u Usage, completionBytes int) (cost float64, priced bool) {
	if b == nil {
		return 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(r)
	p, priced := b.limits.Prices[r.model]
	n := contract.CallTokens(u.PromptTokens, u.CompletionTokens, u.TotalTokens)
	if n == 0 {
		completion := r.bound
		if completion <= 0 {
			completion = estimateTokens(completionBytes, b.bytes, b.tokens)
		}
		n = addTokens(r.prompt, completion)
		if priced {
			cost = p.Cost(r.prompt, completion)
		}
	} else {
		if u.PromptTokens <= 0 {
			// No prompt tokens reported: at least the prompt's estimate.
			n = max(n, addTokens(r.prompt, max(u.CompletionTokens, 0)))
		}
		if priced {
			prompt, completion := max(u.PromptTokens, 0), max(u.CompletionTokens, 0)
			cost = p.Cost(prompt, completion) + Price{OutputPerMTok: max(p.InputPerMTok, p.OutputPerMTok)}.Cost(0, n-prompt-completion)
		}
	}
	b.used = addTokens(b.used, n)
	b.cost += cost
	if u.PromptTokens > 0 && r.promptBytes > 0 && r.images == 0 {
		b.bytes = addTokens(b.bytes, r.promptBytes)
		b.tokens = addTokens(b.tokens, u.PromptTokens)
	}
	return cost, priced
}

// addTokens adds without overflowing.
func addTokens(a, n int) int {
	if a > math.MaxInt-n {
		return math.MaxInt
	}
	return a + n
}

// ErrUnpriced is the error of a call under a cost budget whose model has
// no price: it is not sent.
var ErrUnpriced = errors.New("llm: model has no price")

// EstimatePromptTokens estimates the tokens of a prompt of promptBytes
// bytes (the UTF-8 bytes of its messages' roles and contents) showing
// images images: in the ratio of tokens to bytes the endpoint reported for
// earlier prompts of the same budget, else one token per four bytes, the
// usual rate of English text in BPE tokenizers, plus ImageTokens an image.
// It is the estimate every call is predicted with: a call it lets through
// may still pass the budget, which Exceeded then reports.
func (b *Budget) EstimatePromptTokens(promptBytes, images int) int {
	if b == nil {
		return addTokens(estimateTokens(promptBytes, 0, 0), imageTokens(images))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.estimateLocked(promptBytes, images)
}

// estimateLocked is EstimatePromptTokens with b.mu held.
func (b *Budget) estimateLocked(promptBytes, images int) int {
	return addTokens(estimateTokens(promptBytes, b.bytes, b.tokens), imageTokens(images))
}

// imageTokens is the estimate of images images (ImageTokens each), without
// overflowing.
func imageTokens(images int) int {
	return min(max(images, 0), math.MaxInt/ImageTokens) * ImageTokens
}

// bytesPerToken is the default rate of the estimate.
const bytesPerToken = 4

func estimateTokens(promptBytes, seenBytes, seenTokens int) int {
	if promptBytes <= 0 {
		return 0
	}
	est := math.Ceil(float64(promptBytes) / bytesPerToken)
	if seenBytes > 0 && seenTokens > 0 {
		est = math.Ceil(float64(promptBytes) * float64(seenTokens) / float64(seenBytes))
	}
	return int(min(est, MaxTokenBudget+1)) // past any budget, and no overflow
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
	// Budget names the limit: BudgetTokens or BudgetCost.
	Budget string
	// Limit is the token limit and Used the tokens the calls so far used
	// (BudgetTokens).
	Limit, Used int
	// Predicted, when not 0, says the call was refused before it was
	// sent: the estimate of the tokens it would use (prompt and
	// completion bound), more than Limit - Used - Held (BudgetTokens).
	Predicted int
	// Held is what the calls in flight held when the call was refused
	// (other clients sharing the budget): tokens (BudgetTokens) and US
	// dollars (BudgetCost).
	Held    int
	HeldUSD float64
	// LimitUSD is the cost limit and UsedUSD what the calls so far cost,
	// in US dollars (BudgetCost).
	LimitUSD, UsedUSD float64
	// PredictedUSD, when not 0, says the call was refused before it was
	// sent: the estimate of what it would cost, more than LimitUSD -
	// UsedUSD - HeldUSD (BudgetCost).
	PredictedUSD float64
}

// Error says which budget, its limit, what was used and, for a refused
// call, what it would have used: "the cost budget (maxCostUsd $0.01) was
// passed: cost $0.0123 of $0.01".
func (e *BudgetError) Error() string {
	if e.Budget == BudgetCost {
		if e.PredictedUSD > 0 {
			held := ""
			if e.HeldUSD > 0 {
				held = fmt.Sprintf(", %s held by calls in flight", text.USD(e.HeldUSD))
			}
			return fmt.Sprintf("the cost budget (%s %s) would be passed: cost %s of %s%s, the next model call is estimated at %s, %s is left",
				e.Budget, text.USD(e.LimitUSD), text.USD(e.UsedUSD), text.USD(e.LimitUSD), held, text.USD(e.PredictedUSD), text.USD(max(e.LimitUSD-e.UsedUSD-e.HeldUSD, 0)))
		}
		return fmt.Sprintf("the cost budget (%s %s) was passed: cost %s of %s", e.Budget, text.USD(e.LimitUSD), text.USD(e.UsedUSD), text.USD(e.LimitUSD))
	}
	if e.Predicted > 0 {
		held := ""
		if e.Held > 0 {
			held = fmt.Sprintf(", %s held by calls in flight", text.Thousands(e.Held))
		}
		return fmt.Sprintf("the token budget (%s %s) would be passed: %s tokens used%s, the next model call is estimated at %s, %s are left",
			e.Budget, text.Thousands(e.Limit), text.Thousands(e.Used), held, text.Thousands(e.Predicted), text.Thousands(max(e.Limit-e.Used-e.Held, 0)))
	}
	return fmt.Sprintf("the token budget (%s %s) was passed: %s tokens used", e.Budget, text.Thousands(e.Limit), text.Thousands(e.Used))
}

// Is matches ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }
