// ES module entry of mcpmux/openai-agents: the same class as the CommonJS
// entry (openai-agents.js).
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const adapter = require('./openai-agents.js')

export const { HubMCPServer } = adapter
export default adapter
