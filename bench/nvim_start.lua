-- Headless Neovim (0.7+): start a language server on one buffer and time editor start -> first
-- diagnostics, the way a user meets it. Driven by bench/bench_lsp.py --nvim; the result (ms, JSON)
-- goes to $BENCH_OUT. Any failure exits non-zero via :cquit.
local file = os.getenv("BENCH_FILE")
local root = os.getenv("BENCH_ROOT")
local out_path = os.getenv("BENCH_OUT")
local cmd = vim.fn.json_decode(os.getenv("BENCH_CMD"))
local want_any = os.getenv("BENCH_ANY") == "1"  -- a peer may publish an empty list: any publish counts

local function finish(result)
  local fh = io.open(out_path, "w")
  fh:write(vim.fn.json_encode(result))
  fh:close()
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
vim.bo[bufnr].filetype = "python"
local published = nil
local orig = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, res, ctx, config)
  if published == nil and res and (want_any or #res.diagnostics > 0) then
    published = vim.loop.hrtime()
  end
  return orig(err, res, ctx, config)
end
local t0 = vim.loop.hrtime()
local client_id = vim.lsp.start_client({
  name = "bench",
  cmd = cmd,
  root_dir = root,
  workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
  flags = { debounce_text_changes = 0 },
})
if not client_id then
  finish({ error = "start_client failed" })
  vim.cmd("cquit 1")
end
vim.lsp.buf_attach_client(bufnr, client_id)
if not vim.wait(30000, function() return published ~= nil end, 1) then
  finish({ error = "no diagnostics within 30 s" })
  vim.cmd("cquit 1")
end
finish({ ms = (published - t0) / 1e6 })
vim.lsp.stop_client(client_id, true)
vim.cmd("qall!")
