package addrspace

// ConfigError is a config value the address model refuses, named by its
// path in the config (for example "ranges[0][1].rangeEnd") so that the
// operator can find it. It is not a CNI error because this package must not
// depend on the CNI types; internal/cnierr reports it as code 7 (invalid
// network config) with this error's text as message and details.
type ConfigError struct {
	Field  string
	Value  string // the refused value as written; "" when the field is missing
	Reason string // why Value is refused; "" when the field is missing
}

// Error is "invalid <field>: <reason>; <field>=<value>", or "missing
// <field>; <field>": the text of the CNI error it becomes, so that logs and
// callers that print it read the same either way.
func (e *ConfigError) Error() string {
	if e.Reason == "" {
		return "missing " + e.Field + "; " + e.Field
	}
	return "invalid " + e.Field + ": " + e.Reason + "; " + e.Field + "=" + e.Value
}

// ConfigProblem is how internal/cnierr reads it (its ConfigProblem
// interface): the field, the value, and the reason.
func (e *ConfigError) ConfigProblem() (field, value, reason string) {
	return e.Field, e.Value, e.Reason
}

func invalid(field, value, reason string) error {
	return &ConfigError{Field: field, Value: value, Reason: reason}
}

func missing(field string) error { return &ConfigError{Field: field} }
