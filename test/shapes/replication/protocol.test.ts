import { describe, expect, it } from 'vitest'
import { POSTGRES_EPOCH_MS } from '../../../src/main/shapes/replication/binary-reader'
import { formatLsn, parseLsn } from '../../../src/main/shapes/replication/lsn'
import { decodePgoutput } from '../../../src/main/shapes/replication/pgoutput'
import { withSessionSettings } from '../../../src/main/shapes/replication/session'
import { decodeWalSenderMessage, standbyStatusUpdate } from '../../../src/main/shapes/replication/walsender'

describe('LSNs', () => {
  it('converts between X/Y text and unsigned 64-bit numbers', () => {
    expect(parseLsn('0/16B3748')).toBe(0x16b3748n)
    expect(parseLsn('16/B374D848')).toBe(0x16b374d848n)
    expect(parseLsn('FFFFFFFF/FFFFFFFF')).toBe(2n ** 64n - 1n)
    expect(formatLsn(0x16b374d848n)).toBe('16/B374D848')
    expect(formatLsn(0n)).toBe('0/0')
    for (const text of ['', '16', '1/2/3', 'G/0', '123456789/0']) expect(() => parseLsn(text)).toThrow('not an LSN')
  })
})

describe('session settings', () => {
  it('adds the output settings after any options the URL already has', () => {
    const url = new URL(
      withSessionSettings('postgres://u:p@127.0.0.1:5432/db?options=-c%20search_path%3Dapp&sslmode=disable')
    )
    expect(url.searchParams.get('sslmode')).toBe('disable')
    expect(url.searchParams.get('options')).toBe(
      '-c search_path=app -c DateStyle=ISO,DMY -c TimeZone=UTC -c extra_float_digits=1 -c bytea_output=hex -c IntervalStyle=iso_8601 -c client_encoding=UTF8'
    )
    expect(url.password).toBe('p')
  })

  it('refuses a connection string that is not a URL', () => {
    expect(() => withSessionSettings('host=localhost dbname=x')).toThrow(
      'the connection string must be a postgres:// URL'
    )
  })
})

describe('walsender messages', () => {
  it('writes standby status updates with the applied position and the time since 2000', () => {
    const message = standbyStatusUpdate(0x1_0000_0002n, POSTGRES_EPOCH_MS + 5)
    expect(message.toString('latin1', 0, 1)).toBe('r')
    expect([1, 9, 17].map((offset) => message.readBigUInt64BE(offset))).toEqual([
      0x1_0000_0002n,
      0x1_0000_0002n,
      0x1_0000_0002n
    ])
    expect(message.readBigInt64BE(25)).toBe(5000n)
    expect(message.readUInt8(33)).toBe(0)
  })

  it('reads keepalives and XLogData with their walEnd, and rejects what it does not know', () => {
    const keepalive = Buffer.alloc(18)
    keepalive.write('k', 0, 'latin1')
    keepalive.writeBigUInt64BE(42n, 1)
    keepalive.writeUInt8(1, 17)
    expect(decodeWalSenderMessage(keepalive)).toEqual({ tag: 'keepalive', walEnd: 42n, replyRequested: true })
    const xlogData = Buffer.concat([Buffer.from('w', 'latin1'), Buffer.alloc(24), Buffer.from('B')])
    xlogData.writeBigUInt64BE(7n, 1)
    xlogData.writeBigUInt64BE(43n, 9)
    expect(decodeWalSenderMessage(xlogData)).toEqual({ tag: 'xlogData', walEnd: 43n, payload: Buffer.from('B') })
    expect(() => decodeWalSenderMessage(Buffer.from('x'))).toThrow('unexpected replication message "x"')
  })

  it('rejects pgoutput messages it cannot read instead of guessing', () => {
    expect(() => decodePgoutput(Buffer.from('S'))).toThrow('unexpected pgoutput message "S"')
    const truncatedInsert = Buffer.from([0x49, 0, 0, 0, 1, 0x4e, 0, 1, 0x74, 0, 0, 0, 9, 0x61])
    expect(() => decodePgoutput(truncatedInsert)).toThrow('value past the end')
  })
})
