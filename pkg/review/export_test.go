package review

// Internals the external tests check against other packages' lists.
var (
	ControllerKinds = controllerKinds
)
