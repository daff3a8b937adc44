package connections

// PendingOf exposes a Manager's refreshed token held in memory because its
// write failed, for the external tests.
func (m *Manager) PendingOf(tenant, app, owner string) *Record {
	return m.pendingOf(cacheKey(tenant, app, owner))
}

// CachedOf exposes the record a Manager's cache holds for a connection.
func (m *Manager) CachedOf(tenant, app, owner string) *Record {
	if c, ok := m.cache.Load(cacheKey(tenant, app, owner)); ok {
		return c.(*cached).rec
	}
	return nil
}
