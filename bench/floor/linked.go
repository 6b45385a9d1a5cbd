//go:build linked

package main

// Built with -tags linked, the floor also links every package of the lean
// binary and so runs their package initialisation, while doing nothing
// else: the harness's "floor + packages" subject. Its distance from the
// plain floor is what linking the project's packages costs each exec
// before a personality does any work, a lower bound on ADD ÷ floor.
import _ "github.com/cniplugins/cniplugins/internal/cli"
