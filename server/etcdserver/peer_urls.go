package etcdserver

import (
	"slices"
	"sync"
)

// peerURLCache remembers one member's peer URLs so that forwarding to the
// leader (every keepalive a follower receives) does not load and decode
// the members bucket each time. Whatever changes peer URLs (an applied
// conf change, an installed snapshot) calls invalidate; a lookup that
// raced with it stores nothing.
type peerURLCache struct {
	mu   sync.Mutex
	gen  uint64 // bumped by invalidate
	id   uint64 // member the URLs belong to; 0: none cached
	urls []string
}

func (c *peerURLCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.id, c.urls = 0, nil
}

// get returns id's peer URLs, from the cache or else from load.
func (c *peerURLCache) get(id uint64, load func(uint64) []string) []string {
	c.mu.Lock()
	if c.id == id && id != 0 {
		urls := c.urls
		c.mu.Unlock()
		return urls
	}
	gen := c.gen
	c.mu.Unlock()
	urls := load(id)
	if len(urls) == 0 {
		return nil
	}
	c.mu.Lock()
	if c.gen == gen {
		c.id, c.urls = id, slices.Clone(urls)
	}
	c.mu.Unlock()
	return urls
}
