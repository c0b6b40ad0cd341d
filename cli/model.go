package cli

import (
	"encoding/json"
	"os"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/modelreg"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/secrets"
)

// The model side of a run: which agent and model a task runs with, its
// Planner and Navigator, its model budget, and what the registry says of
// the model (its prices, whether it accepts images). checkModelRegistry,
// which asks the endpoint, is in modelreg.go.

// hasHint reports whether the task's hints have the member.
func hasHint(in contract.Input, name string) bool {
	var m map[string]json.RawMessage
	return len(in.Hints) > 0 && json.Unmarshal(in.Hints, &m) == nil && m[name] != nil
}

// agents builds the Planner and the Navigator for the task, for the agent
// and model agentModel settled (o.agent, model).
//
// The model clients charge budget, the session's (session.Config.Budget).
func agents(o *runOptions, in contract.Input, model string, set *secrets.Set, budget *llm.Budget) (planner.Planner, navigator.Navigator, error) {
	switch agent := o.agent; agent {
	case "llm":
		base := llmBaseURL(o)
		key, err := llm.LoadAPIKey(o.keyFile)
		if err != nil {
			return nil, nil, usageError("%v", err)
		}
		c, err := llm.New(llm.Config{BaseURL: base, Model: model, APIKey: key, Guard: set.Guard(), Budget: budget})
		if err != nil {
			return nil, nil, usageError("%v", err)
		}
		pl, err := planner.NewLLM(c, planner.LLMOptions{Secrets: set})
		if err != nil {
			return nil, nil, err
		}
		nav, err := navigator.NewLLM(c, navigator.LLMOptions{Secrets: set})
		if err != nil {
			return nil, nil, err
		}
		return pl, nav, nil
	case "steps", "script":
		plan, err := planner.FromHints(in.Goal, in.Hints)
		if err != nil {
			return nil, nil, usageError("the task's hints: %v", err)
		}
		pl, err := planner.NewStatic(plan)
		if err != nil {
			return nil, nil, usageError("the task's hints: %v", err)
		}
		var nav navigator.Navigator
		if agent == "steps" {
			nav, err = navigator.NewStepsFromHints(in.Hints, navigator.StepsOptions{BaseURL: in.URLs[0], Secrets: set})
		} else {
			nav, err = navigator.NewScriptFromHints(in.Hints, navigator.ScriptOptions{Secrets: set})
		}
		if err != nil {
			return nil, nil, usageError("the task's hints for the %s agent: %v", agent, err)
		}
		return pl, nav, nil
	}
	return nil, nil, usageError("unknown --agent %q (want llm, steps or script)", o.agent)
}

// agentModel settles the agent (o.agent: --agent, else llm with a model,
// else steps or script by the task's hints) and returns the model of the
// llm agent ("" for the offline agents).
func agentModel(o *runOptions, in contract.Input) (string, error) {
	model := o.model
	if model == "" {
		model = os.Getenv(EnvModel)
	}
	if o.agent == "" {
		switch {
		case model != "":
			o.agent = "llm"
		case hasHint(in, "steps"):
			o.agent = "steps"
		case hasHint(in, "script"):
			o.agent = "script"
		default:
			return "", usageError("no agent: configure a model (--model or $%s) or give the task hints.steps or hints.script%s", EnvModel, hintTypo(in))
		}
	}
	switch o.agent {
	case "llm":
		if model == "" {
			return "", usageError("--agent llm needs a model: --model or $%s", EnvModel)
		}
		return model, nil
	case "steps", "script":
		return "", nil
	}
	return "", usageError("unknown --agent %q (want llm, steps or script)", o.agent)
}

// runBudget is the session's model budget: the task's token and cost
// budgets, and the model's prices from the registry entry (priced) when
// a registry checked the model. A cost budget for a model without prices
// (no --model-registry) is refused: nothing could count its cost.
func runBudget(o *runOptions, in contract.Input, model string, priced *modelreg.Model) (*llm.Budget, error) {
	maxTokens, err := in.MaxTokens()
	if err != nil {
		return nil, usageError("invalid task: %v", err)
	}
	maxCost, err := in.MaxCostUSD()
	if err != nil {
		return nil, usageError("invalid task: %v", err)
	}
	limits := llm.Limits{MaxTokens: maxTokens, MaxCostUSD: maxCost}
	switch {
	case priced != nil:
		limits.Prices = map[string]llm.Price{model: priced.Prices}
	case maxCost > 0 && model != "":
		return nil, usageError("a cost budget (--max-cost-usd or hints.%s) needs the model's prices: give --model-registry FILE with an entry for model %q at %s and its prices (README, \"Model registry\")", contract.HintMaxCostUSD, model, llmBaseURL(o))
	}
	budget, err := llm.NewBudget(limits)
	if err != nil {
		return nil, usageError("invalid task: %v", err)
	}
	return budget, nil
}

// modelPrices are the prices of the registry's entry for the manifest;
// nil without one.
func modelPrices(entry *modelreg.Model) *contract.ModelPrices {
	if entry == nil {
		return nil
	}
	p := entry.Prices
	return &p
}

// modelImages says whether the model accepts images (the session may then
// show it screenshots, when the policy allows): with --model-registry the
// registry's "images" for the model (entry, from checkModelRegistry), else --vision;
// never for the offline agents (model ""). --vision contradicting the
// registry, or without a model, is a usage error.
func modelImages(o *runOptions, model string, entry *modelreg.Model) (bool, error) {
	switch {
	case model == "":
		if o.vision {
			return false, usageError("--vision needs the LLM agent (a model): the offline agents look at no images")
		}
		return false, nil
	case entry != nil:
		if o.vision && !entry.Images {
			return false, usageError("--vision: the model registry %s says model %q accepts no images", o.modelRegistry, model)
		}
		return entry.Images, nil
	}
	return o.vision, nil
}
