export { formatLsn, parseLsn } from '../../../shared/protocol'
