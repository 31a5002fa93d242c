-- Custom SQL migration file, put your code below! --
-- Media bytes are stored uncompressed out of line (TOAST without compression): they are
-- mostly compressed already, and the media route reads a range with substring(), which
-- then fetches only the TOAST chunks holding it instead of decompressing the whole value.
ALTER TABLE "chat_media" ALTER COLUMN "bytes" SET STORAGE EXTERNAL;
