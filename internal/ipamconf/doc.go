// Package ipamconf reads what a CNI runtime hands an allocator (the
// network configuration's ipam keys, CNI_ARGS, the pod's annotations,
// prevResult, GC's valid attachments) into the engine's types: a
// validated *alloc.Config, the requested addresses, a sticky key, the
// addresses and choices of pools prevResult names. The engine
// (internal/alloc) decides over these values and never reads the CNI
// envelope itself. Personality is an allocator's five commands: they
// read the request into these values and run the engine over the
// allocator's Store.
package ipamconf
