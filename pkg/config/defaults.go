package config

// Default returns a fully defaulted, valid configuration for when no file is given.
func Default() *Configuration {
	c := &Configuration{}
	c.SetDefaults()
	return c
}

// SetDefaults fills every unset field with its documented default, so that the rest of the program
// never has to interpret an empty value. It is idempotent.
func (c *Configuration) SetDefaults() {
	if c.APIVersion == "" {
		c.APIVersion = GroupVersion
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	if c.InstallProfile == "" {
		c.InstallProfile = ProfileManaged
	}
	if c.KueueNamespace == "" {
		c.KueueNamespace = DefaultKueueNamespace
	}
	if c.Defaulting.MissingLocalQueue == "" {
		c.Defaulting.MissingLocalQueue = MissingLocalQueueWarn
	}
	if c.Integrations.Action == "" {
		c.Integrations.Action = IntegrationActionDeny
	}
	if len(c.Controllers.Allowed) == 0 && c.InstallProfile == ProfileManaged {
		c.Controllers.Allowed = []ControllerRef{{Namespace: c.KueueNamespace, Name: DefaultKueueControllerName}}
	}
	for i := range c.Controllers.Allowed {
		if c.Controllers.Allowed[i].Namespace == "" {
			c.Controllers.Allowed[i].Namespace = c.KueueNamespace
		}
	}
	if c.Policies.Directory == "" {
		c.Policies.Directory = DefaultPolicyDirectory
	}
	if c.Policies.OnError == "" {
		c.Policies.OnError = OnErrorDeny
	}
}
