/**
 * A function turning a row's values (an array, in column order) into an object keyed by
 * `keys`, each value passed through its decoder where it has one (a null stays null).
 *
 * The object is one literal written for these keys, so V8 makes every row at its final
 * shape; assigning the keys one by one took ~100 ns a row (a keyed store that sees every
 * key). The keys are the columns' own names from the schema, written as JSON strings: no
 * text from a request reaches the function's source.
 */
export function rowObjectMaker(
  keys: readonly string[],
  decoders: readonly (((value: unknown) => unknown) | null)[],
): (values: readonly unknown[]) => unknown {
  const entries = keys.map((key, i) => {
    const name = JSON.stringify(key);
    return decoders[i] ? `${name}: v[${i}] == null ? null : d[${i}](v[${i}])` : `${name}: v[${i}]`;
  });
  return new Function('d', `return (v) => ({ ${entries.join(', ')} });`)(decoders) as (
    values: readonly unknown[],
  ) => unknown;
}
