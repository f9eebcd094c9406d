-- Drive `denpex serve` from Neovim 0.7 (headless): open a buggy file, receive diagnostics,
-- hover, list code actions, apply one, see the diagnostic go. Results go to $DENPEX_OUT (JSON);
-- any failure exits non-zero via :cquit.
local file = os.getenv("DENPEX_FILE")
local root = os.getenv("DENPEX_ROOT")
local out_path = os.getenv("DENPEX_OUT")
local cmd = vim.fn.json_decode(os.getenv("DENPEX_CMD"))
local result = { steps = {} }

local function write_result()
  local fh = io.open(out_path, "w")
  fh:write(vim.fn.json_encode(result))
  fh:close()
end

local function fail(msg)
  result.error = msg
  write_result()
  vim.cmd("cquit 1")
end

local function step(name) table.insert(result.steps, name) end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = "python"
  local client_id = vim.lsp.start_client({
    name = "denpex",
    cmd = cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    init_options = { debounceMs = 0 },
    flags = { debounce_text_changes = 0 },
  })
  if not client_id then return fail("start_client failed") end
  vim.lsp.buf_attach_client(bufnr, client_id)
  step("started")

  if not vim.wait(20000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20) then
    return fail("no diagnostics within 20 s")
  end
  local d = vim.diagnostic.get(bufnr)[1]
  result.diagnostic = { lnum = d.lnum, col = d.col, message = d.message, severity = d.severity,
                        source = d.source, code = (d.user_data and d.user_data.lsp and d.user_data.lsp.code) }
  step("diagnostics")

  local uri = vim.uri_from_bufnr(bufnr)
  local hover = vim.lsp.buf_request_sync(bufnr, "textDocument/hover",
    { textDocument = { uri = uri }, position = { line = d.lnum, character = d.col + 2 } }, 10000)
  local hover_text = nil
  for _, r in pairs(hover or {}) do
    if r.result and r.result.contents then hover_text = r.result.contents.value end
  end
  if not hover_text then return fail("no hover") end
  result.hover = hover_text
  step("hover")

  local line_diags = vim.lsp.diagnostic.get_line_diagnostics(bufnr, d.lnum)
  local actions = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", {
    textDocument = { uri = uri },
    range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } },
    context = { diagnostics = line_diags },
  }, 10000)
  local titles, chosen = {}, nil
  for _, r in pairs(actions or {}) do
    for _, a in ipairs(r.result or {}) do
      table.insert(titles, a.title)
      if a.title:find("^Disable") then chosen = a end
    end
  end
  result.actions = titles
  if not chosen then return fail("no suppression action among " .. vim.inspect(titles)) end
  step("code actions")

  local client = vim.lsp.get_client_by_id(client_id)
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  result.applied = chosen.title
  result.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
  if not vim.wait(20000, function() return #vim.diagnostic.get(bufnr, { lnum = d.lnum }) == 0 end, 20) then
    return fail("diagnostic still present after applying " .. chosen.title)
  end
  step("applied")
  vim.lsp.stop_client(client_id)
  write_result()
  vim.cmd("qall!")
end)
if not ok then fail("lua error: " .. tostring(err)) end
