package guest

import (
	"encoding/json"
	"fmt"

	"github.com/wasmtask/wasmtask/abi"
)

// SampleRequest is a request for a message from the client's model (MCP's
// sampling/createMessage params): at least one message and a maxTokens.
type SampleRequest struct {
	Messages     []SampleMessage `json:"messages"`
	MaxTokens    int             `json:"maxTokens"`
	SystemPrompt string          `json:"systemPrompt,omitempty"`
	Temperature  float64         `json:"temperature,omitempty"`
}

// SampleMessage is one message of a [SampleRequest] or the answer of a
// [SampleResult]: a role ("user" or "assistant") and one content block.
type SampleMessage struct {
	Role    string      `json:"role"`
	Content abi.Content `json:"content"`
}

// SampleResult is the client's answer: the model's message, the model's
// name and why it stopped.
type SampleResult struct {
	Role       string      `json:"role"`
	Content    abi.Content `json:"content"`
	Model      string      `json:"model"`
	StopReason string      `json:"stopReason,omitempty"`
}

// Root is one root the client shares (roots/list): a file:// URI and an
// optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Sample asks the client's model for a message (ABI 1.2, sampling). It
// fails with ErrElicitUnsupported when the client cannot be asked (it did
// not declare sampling, or the call is a task or a 2026-07-28 request),
// ErrElicitLimit past the call's or session's bound on questions (shared
// with Elicit), and ErrElicitBadRequest for a request the host refused.
func (c *Call) Sample(req SampleRequest) (*SampleResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitBadRequest, err)
	}
	c.mu.Lock()
	reply, code := c.host.sample(b)
	c.mu.Unlock()
	if err := askError(code); err != nil {
		return nil, err
	}
	var res SampleResult
	if err := json.Unmarshal(reply, &res); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitReply, err)
	}
	return &res, nil
}

// SampleText asks the client's model to answer prompt in at most
// maxTokens, and returns the text of its answer ("" when it answered with
// another kind of content).
func (c *Call) SampleText(prompt string, maxTokens int) (string, error) {
	res, err := c.Sample(SampleRequest{MaxTokens: maxTokens, Messages: []SampleMessage{{Role: "user", Content: abi.Content{Type: "text", Text: prompt}}}})
	if err != nil {
		return "", err
	}
	return res.Content.Text, nil
}

// Roots asks the client for its roots (ABI 1.2, roots/list), with the
// errors of Sample.
func (c *Call) Roots() ([]Root, error) {
	c.mu.Lock()
	reply, code := c.host.roots()
	c.mu.Unlock()
	if err := askError(code); err != nil {
		return nil, err
	}
	var res struct {
		Roots []Root `json:"roots"`
	}
	if err := json.Unmarshal(reply, &res); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitReply, err)
	}
	return res.Roots, nil
}

// askError is the error of a negative code of elicit, sample or roots.
func askError(code int32) error {
	switch {
	case code == abi.ElicitBadRequest:
		return fmt.Errorf("%w: the host refused it", ErrElicitBadRequest)
	case code == abi.ElicitUnsupported:
		return ErrElicitUnsupported
	case code == abi.ElicitLimit:
		return ErrElicitLimit
	case code < 0:
		return fmt.Errorf("%w (code %d)", ErrElicitUnsupported, code)
	}
	return nil
}
