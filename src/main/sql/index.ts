// The SQL toolkit's public entry: code outside src/main/sql imports from here only (eslint enforces it).
export { WHERE_PREFIX, deparseExpression, deparseSortClause, loadParser, parse } from './ast'
export {
  type CompiledWhere,
  type CompileWhereInput,
  MAX_WHERE_LENGTH,
  bareWhereClause,
  compileWhere,
  parseSelect
} from './compile-where'
export { MAX_WHERE_DEPTH, compileCondition } from './compile/walk'
export { conditionProbes } from './compile/logic'
export { ALLOWED_FUNCTIONS } from './compile/functions'
export { type CompileContext } from './compile/typed'
export { type Row, RowValues } from './row-values'
export { type ColumnCategory, type ColumnType, type ColumnTypes, lookupColumn, toColumnTypes } from './column-types'
export { type WhereParam, WhereError, WhereRuntimeError, isCallersQueryError } from './errors'
export {
  InputCapError,
  MAX_LIKE_PATTERN_LENGTH,
  MAX_PARAMS_LENGTH,
  checkInputCaps,
  checkParamsLength
} from './input-caps'
export { IdentifierError, parseTableName, quoteIdent } from './identifiers'
export { compileOrderBy } from './order-by'
export { type ChangeRoute, type ShapeRouter, createShapeRouter } from './router'
export { type CatalogColumn, type CatalogTable, type Queryable, readCatalog } from './catalog'
export { type Alternatives, allOf, anyOf } from './probes'
