package review

// Internals the external tests check against other packages' lists.
var (
	BuiltinRules    = builtinRules
	ControllerKinds = controllerKinds
)
