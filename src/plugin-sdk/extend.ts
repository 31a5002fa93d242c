import type { ObjectRef } from '@pothos/core';
import { builder, type BuilderTypes } from '../graph/builder.js';
import { costs } from '../graph/complexity.js';
import { STATEMENT } from '../graph/costs.js';

/** All a plugin field on a core type may know of its parent: the id. */
export interface CoreParent {
  id: string;
}

type Types = BuilderTypes;
type FieldBuilder = PothosSchemaTypes.ObjectFieldBuilder<Types, CoreParent>;
type FieldOptions = Parameters<FieldBuilder['field']>[0];

/** The one way a plugin adds a field to a core type: `t.field` with its own `resolve`. */
export interface CoreFieldBuilder {
  field: FieldBuilder['field'];
  arg: FieldBuilder['arg'];
}

/**
 * Adds `name` to a core type (NOTES.md: the `@goField(forceResolver: true)` rule). The
 * resolver always runs and receives `{ id }` only, never the core's parent object, so a
 * plugin cannot come to depend on how the core loads its rows. The field costs STATEMENT
 * a parent row in the complexity model unless its `extensions` declare another cost (a
 * field batched through a DataLoader declares `costs({ cost: 0 })`).
 */
export function extendCoreType<Shape extends CoreParent>(
  ref: ObjectRef<Types, Shape>,
  name: string,
  define: (t: CoreFieldBuilder) => ReturnType<FieldBuilder['field']>,
): void {
  builder.objectField(ref as unknown as ObjectRef<Types, CoreParent>, name, (t) =>
    define({
      arg: t.arg,
      field: ((options: FieldOptions) => {
        const resolve = (options as { resolve?: (...args: unknown[]) => unknown }).resolve;
        if (typeof resolve !== 'function') {
          throw new Error(
            `${ref.name}.${name}: a plugin field on a core type needs its own resolver`,
          );
        }
        return t.field({
          ...options,
          // Its own resolver runs once a parent row: a statement each, unless declared.
          extensions: {
            ...costs({ cost: STATEMENT }),
            ...options.extensions,
            pluginResolver: true,
          },
          resolve: (parent: CoreParent, ...rest: unknown[]) => resolve({ id: parent.id }, ...rest),
        } as FieldOptions);
      }) as FieldBuilder['field'],
    }),
  );
}
