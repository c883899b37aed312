import { describe, expect, it } from 'vitest'
import { corsOriginRule, isLoopbackOrigin } from '../../src/main/net/guard'
import { hostAllowed } from '../../src/main/net/host-rule'

describe('which Host names the server', () => {
  it('on loopback: the loopback names with any port, nothing else', () => {
    const rule = { bindHost: '127.0.0.1', allowedHosts: [] }
    for (const host of ['localhost', 'localhost:3000', '127.0.0.1:1', '[::1]:3000', '[::1]', 'LocalHost:3000'])
      expect(hostAllowed(rule, host), host).toBe(true)
    for (const host of [
      'evil.test',
      'evil.test:3000',
      '192.168.1.10:3000',
      'localhost.evil.test',
      '127.0.0.1.evil.test:3000',
      '',
      '[::2]:3000',
      '0.0.0.0:3000',
      '127.0.0.1:3000@evil.test',
      '127.0.0.1:evil',
      'localhost:3000/x',
      '[::1]evil',
      'local host'
    ]) {
      expect(hostAllowed(rule, host), host).toBe(false)
    }
    expect(hostAllowed(rule, undefined)).toBe(false)
  })

  it('on a LAN address: that address and loopback', () => {
    const rule = { bindHost: '192.168.1.10', allowedHosts: [] }
    expect(hostAllowed(rule, '192.168.1.10:3000')).toBe(true)
    expect(hostAllowed(rule, 'localhost:3000')).toBe(true)
    expect(hostAllowed(rule, '192.168.1.11:3000')).toBe(false)
    expect(hostAllowed(rule, 'evil.test:3000')).toBe(false)
  })

  it('on a wildcard address: any IP literal (a rebinding page has a DNS name), loopback, and allowed names only', () => {
    for (const bindHost of ['0.0.0.0', '::']) {
      const rule = { bindHost, allowedHosts: ['devbox.local'] }
      for (const host of [
        '192.168.1.10:3000',
        '10.0.0.2',
        '[fe80::1]:3000',
        'localhost:3000',
        'devbox.local:3000',
        'DEVBOX.local'
      ])
        expect(hostAllowed(rule, host), host).toBe(true)
      for (const host of ['evil.test:3000', 'devbox.local.evil.test:3000', '192.168.1.10.nip.io:3000'])
        expect(hostAllowed(rule, host), host).toBe(false)
    }
  })

  it('on an IPv6 address: that address, bracketed as a Host header writes it', () => {
    const rule = { bindHost: 'fd00::5', allowedHosts: [] }
    expect(hostAllowed(rule, '[fd00::5]:3000')).toBe(true)
    expect(hostAllowed(rule, '[fd00::6]:3000')).toBe(false)
  })
})

describe('which pages may read the shape API', () => {
  it('loopback pages on any port, never look-alikes', () => {
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1', 'https://localhost:8443', 'http://[::1]:3000'])
      expect(isLoopbackOrigin(origin), origin).toBe(true)
    for (const origin of [
      'null',
      'http://localhost.evil.test',
      'http://127.0.0.1.evil.test:80',
      'http://evil.test',
      'file://',
      'http://localhost:5173/',
      'ws://localhost:1',
      'http://user@localhost:1'
    ]) {
      expect(isLoopbackOrigin(origin), origin).toBe(false)
    }
  })

  it('plus the origins given with --cors-origin, or every origin with *', () => {
    expect(corsOriginRule(['http://192.168.1.20:5173'])('http://192.168.1.20:5173')).toBe(true)
    expect(corsOriginRule(['http://192.168.1.20:5173'])('http://192.168.1.20:5174')).toBe(false)
    expect(corsOriginRule(['*'])('http://anywhere.test')).toBe(true)
  })
})
