import { lexicographicSortSchema, type GraphQLSchema } from 'graphql';
import { builder } from './builder.js';
// Core graph modules register their types on import.
import './scalars.js';
import '../meta/graph.js';
import '../users/graph.js';
import '../contacts/graph.js';
import '../tasks/graph.js';
import '../auth/graph.js';
import '../users/admin-graph.js';
import '../auth/tokens-graph.js';
import '../locale/graph.js';
import '../events/graph.js';
import '../webhooks/graph.js';

let built: GraphQLSchema | undefined;

/**
 * The schema of the core and of every plugin whose backend was imported before this call
 * (see plugin-host). Built once per process.
 */
export function buildSchema(): GraphQLSchema {
  built ??= lexicographicSortSchema(builder.toSchema());
  return built;
}
