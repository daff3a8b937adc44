package connections

// PendingOf exposes a Manager's refreshed token held in memory because its
// write failed, for the external tests.
func (m *Manager) PendingOf(tenant, app, owner string) *Record {
	return m.pendingOf(cacheKey(tenant, app, owner))
}
