import { statSync } from 'node:fs';
import { accept, refuse, type Parsed } from './parsed.js';

/**
 * A path naming an existing directory (SVC_MAIL_TEMPLATE_DIR: "a missing directory is
 * refused"). Checked once at load so `svc check` catches it, not the first mail.
 */
export function parseDirectory(text: string): Parsed<string> {
  let isDirectory = false;
  try {
    isDirectory = statSync(text, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    // An unreadable path (permission denied) is as unusable as a missing one.
  }
  return isDirectory ? accept(text) : refuse('must name an existing directory');
}
