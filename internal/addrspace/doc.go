// Package addrspace is the address model that the allocators, selectors,
// Docker driver and operators' commands share: host-local's ranges and
// range sets (checked as host-local checks them), exclusions held as merged
// runs, the iterator that walks a set in host-local's round-robin order,
// and the count of addresses a set can hand out. It does no I/O (no files,
// locks or network) and has no package-level state, so that anything that
// only needs to reason about addresses can use it without a state
// directory; allocating is internal/alloc's job, and keeping reservations
// its stores'.
// Config errors are *ConfigError rather than CNI errors so that it depends
// on the standard library alone; internal/cnierr reports them as code 7.
package addrspace
