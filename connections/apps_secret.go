package connections

// ClientSecret is the app's client secret, read from the environment
// variable clientSecretEnv names ("" when it is not set): for the OAuth
// clients of remote MCP servers (package mcpauth), which authenticate with
// it at the token endpoint. Never log it.
func (a *App) ClientSecret() string { return a.clientSecret }
