// Package admission is the server's admission controller: every tool call
// enters it before its instance exists and leaves it when the instance is
// gone. It owns the bounds on what runs at once — a tool's slots, its
// module's share of the instances and the memory budget, the caller's
// tenant's share, the server's slots and budget — checks them together
// under one mutex, queues what cannot start within bounded queues, and
// chooses the next call fairly across tenants and modules (see
// [Controller]). It knows nothing of Wasm, MCP or policy files: the host
// gives it numbers and names. Standard library only.
//
//	c := admission.New(slots, budgetBytes)
//	m := c.NewModule("m", moduleSlots, moduleBytes)
//	t := c.NewTool(m, toolSlots, toolQueue)
//	if err := c.EnterAs(ctx, t, reserve, admission.Caller{Tenant: "user:a"}); err != nil { … }
//	defer c.LeaveAs(t, reserve, "user:a")
//
// [MachineMemory] reads what the default budget is derived from: the
// memory this process may use, by its cgroup limits and /proc/meminfo.
package admission
