// ES module entry of mcpmux: the same objects as the CommonJS entry
// (index.js), so `instanceof McpmuxError` holds whichever way it was loaded.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mcpmux = require('./index.js')

export const { Hub, EventStream, Policy, Sessions, McpmuxError, ERROR_CODES, version } = mcpmux
export default mcpmux
