// Starts the bench's client scripts on behalf of bench/shape-server.ts, which starts this process first, while it is
// still small. Node's child_process forks: a fork write-protects every page of the forking process, and each page it
// writes afterwards costs a fault (14–21 µs each on the project's VM) that a server never pays in production. Forking
// the clients from the server's process charged a sync of 1,000,000 rows 30,000–55,000 such faults.
// Protocol, one JSON object per line: in {id, argv} (program and arguments) and {id, stdin: text};
// out {id, stdout: text} and {id, exit: code}.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const children = new Map()
let closing = false
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`)

function start({ id, argv: [program, ...args] }) {
  const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'inherit'] })
  children.set(id, child)
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (text) => send({ id, stdout: text }))
  child.on('error', (error) => {
    process.stderr.write(`client-launcher: ${program}: ${error.message}\n`)
    children.delete(id)
    send({ id, exit: -1 })
  })
  child.on('exit', (code) => {
    children.delete(id)
    send({ id, exit: code })
    if (closing && children.size === 0) process.exit(0)
  })
}

createInterface({ input: process.stdin })
  .on('line', (line) => {
    const command = JSON.parse(line)
    if (command.argv) start(command)
    else children.get(command.id)?.stdin.write(command.stdin)
  })
  .on('close', () => {
    closing = true
    for (const child of children.values()) child.kill()
    if (children.size === 0) process.exit(0)
  })
