/** The only two IPC channels: every contract call goes through one, every event through the other. */
export const IPC_CALL = 'syncscope:call'
export const IPC_EVENT = 'syncscope:event'
