import { describe, expect, it } from 'vitest'
import { isSafeExternalUrl } from '../../src/main/net/external-url'

describe('isSafeExternalUrl', () => {
  it.each([
    ['https://example.com/authorize?x=1', true],
    ['http://127.0.0.1:3900/auth', true],
    ['HTTPS://EXAMPLE.COM', true],
    ['file:///etc/passwd', false],
    ['javascript:alert(1)', false],
    ['smb://server/share', false],
    ['vscode://open', false],
    ['not a url', false],
    ['', false]
  ])('%s → %s', (url, safe) => expect(isSafeExternalUrl(url)).toBe(safe))
})
