import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto'

/**
 * The SCRAM-SHA-256 verifier Postgres stores for a password (RFC 5802/7677, as `pg_authid.rolpassword` holds it).
 * `ALTER ROLE … PASSWORD '<verifier>'` sets a password without the password itself reaching the server or its log.
 */
export function scramVerifier(password: string, iterations = 4096, salt = randomBytes(16)): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256')
  const clientKey = createHmac('sha256', salted).update('Client Key').digest()
  const storedKey = createHash('sha256').update(clientKey).digest()
  const serverKey = createHmac('sha256', salted).update('Server Key').digest()
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`
}
