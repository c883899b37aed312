import { describe, expect, it } from 'vitest'
import {
  fromSdkClient,
  fromSdkTokens,
  seedOAuthState,
  statesMatch,
  toSdkClient,
  toSdkTokens,
  type OAuthState
} from '../../src/main/mcp/auth/authorization-code'

describe('OAuth token and client records', () => {
  it('keeps the previous refresh token when a refresh response has none, and computes expiry in seconds', () => {
    const now = 1_700_000_000_000
    const tokens = fromSdkTokens(
      { access_token: 'new', token_type: 'Bearer', expires_in: 60, issuer: 'http://as/' },
      { accessToken: 'old', refreshToken: 'rt-1' },
      now
    )
    expect(tokens).toEqual({
      accessToken: 'new',
      tokenType: 'Bearer',
      refreshToken: 'rt-1',
      expiresAt: 1_700_000_060,
      issuer: 'http://as/'
    })
    expect(toSdkTokens(tokens, now)).toMatchObject({
      access_token: 'new',
      refresh_token: 'rt-1',
      expires_in: 60,
      issuer: 'http://as/'
    })
  })

  it('keeps registration metadata as returned, in both directions', () => {
    const sdk = {
      client_id: 'c',
      client_secret: 's',
      redirect_uris: ['http://127.0.0.1:1/cb'],
      client_id_issued_at: 5,
      issuer: 'http://as/'
    }
    const ours = fromSdkClient(sdk)
    expect(ours).toEqual({
      clientId: 'c',
      clientSecret: 's',
      redirect_uris: ['http://127.0.0.1:1/cb'],
      client_id_issued_at: 5,
      issuer: 'http://as/'
    })
    expect(toSdkClient(ours)).toEqual(sdk)
  })

  it('never lets seed tokens replace fresh ones', () => {
    const state: OAuthState = {}
    seedOAuthState(state, { mode: 'authorizationCode', tokens: { accessToken: 'seed-1' } })
    expect(state.tokens).toEqual({ value: { accessToken: 'seed-1' }, origin: 'seed' })
    state.tokens = { value: { accessToken: 'fresh' }, origin: 'fresh' }
    seedOAuthState(state, { mode: 'authorizationCode', tokens: { accessToken: 'seed-2' } })
    expect(state.tokens.value.accessToken).toBe('fresh')
  })

  it('compares state values exactly and refuses missing ones', () => {
    expect(statesMatch('abc', 'abc')).toBe(true)
    expect(statesMatch('abc', 'abd')).toBe(false)
    expect(statesMatch('abc', 'abcd')).toBe(false)
    expect(statesMatch(undefined, 'abc')).toBe(false)
    expect(statesMatch('abc', null)).toBe(false)
  })
})
