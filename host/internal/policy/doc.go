// Package policy is the operator's sandbox policy: the [Policy] document
// (what the server admits at once, the limits of every tool, what each
// module is granted), its strict parsing and validation ([Load], [Parse]),
// and the settings derived from it — a tool's effective limits
// ([Policy.ForTool]) and the runtime's limits they make ([Tool.Limits]),
// a module's entry ([Policy.ForModule]) and admission share
// ([Policy.ModuleShare]), the limits of a module's load
// ([Policy.LoadLimits]), the server-wide bounds ([Policy.Bounds],
// [Policy.MemoryBudget]) and the naming rules for plugins.Build
// ([Policy.Rules]).
//
// It holds no server state and enforces nothing: the host reads a policy
// when it builds a catalog or loads a module, admission enforces the
// shares, the runtime the limits. It does not read the tenant file (see
// tenancy) and does not watch the policy file (the command reads it again
// on SIGHUP).
// Package host re-exports the types under their public names (host.Policy,
// host.ModulePolicy, host.ToolPolicy, host.Grants, host.MountPolicy).
//
// A minimal use:
//
//	p, err := policy.Parse([]byte(`{"defaults": {"timeout": "5s"}}`))
//	if err != nil {
//		return err // wraps ErrInvalid
//	}
//	entry, err := p.ForModule(m) // err: a pin that does not match
//	tp := p.ForTool(entry, "search")
//	lim := tp.Limits(entry.Grants, os.LookupEnv)
//
// A nil *Policy is the defaults: every method accepts it.
package policy
