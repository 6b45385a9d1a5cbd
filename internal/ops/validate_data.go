package ops

// Data validates one configuration file given by its content, as Files
// validates a file: name (its base name decides, as libcni's, whether it
// is a list) names it in every Problem. k8s-install checks exactly the
// bytes it is about to write, never a path it would read a second time
// (the ConfigMap may be swapped in between), and its container's root
// file system is read-only, so there is no temporary file to write either.
func (v Validator) Data(name string, data []byte) []Problem {
	return withSeverity(v.file(name, data, definitions{}))
}
