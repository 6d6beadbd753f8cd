/**
 * The boards' script (served as /console/assets/board.js; CSP script-src 'self'). It only improves the cards' move
 * forms, which work without it: a card dragged to a column, or picked up from the keyboard (Space), moved between
 * columns (left and right arrows) and dropped (Enter; Escape cancels), submits its own form with the chosen stage.
 * The answer is the board again (the card moved, or in place with the reason it was refused): the board is swapped
 * for it, the focus returns to the card, and the outcome is read out through the live region.
 */
export const BOARD_SCRIPT = `'use strict';
(function () {
  var live = document.getElementById('board-live');
  function say(text) { if (live) { live.textContent = ''; setTimeout(function () { live.textContent = text; }, 50); } }
  function columns() { return Array.prototype.slice.call(document.querySelectorAll('#board .board-column')); }
  function nameOf(column) { var h = column.querySelector('h2'); return h ? h.firstChild.textContent.trim() : ''; }
  function titleOf(card) { var h = card.querySelector('h3'); return h ? h.textContent.trim() : 'The card'; }
  function canGo(card, stage) { return !!card.querySelector('select[name="stage"] option[value="' + CSS.escape(stage) + '"]'); }
  var busy = false;

  function move(card, stage) {
    var form = card.querySelector('form.move');
    if (!form || busy) return;
    if (stage === card.getAttribute('data-stage')) { say(titleOf(card) + ' stays where it is.'); return; }
    if (!canGo(card, stage)) { say(titleOf(card) + ' cannot be moved there.'); return; }
    form.querySelector('select[name="stage"]').value = stage;
    var id = card.getAttribute('data-id');
    busy = true;
    say('Moving ' + titleOf(card) + '…');
    fetch(form.action, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(new FormData(form)).toString()
    }).then(function (r) { return r.text(); }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, 'text/html');
      var board = doc.getElementById('board'), answer = doc.getElementById('board-answer');
      if (!board || !answer) { window.location.reload(); return; }
      document.getElementById('board').replaceWith(document.importNode(board, true));
      document.getElementById('board-answer').replaceWith(document.importNode(answer, true));
      var again = document.querySelector('#board .card[data-id="' + CSS.escape(id) + '"]');
      if (again) again.focus();
      say(document.getElementById('board-answer').textContent.trim());
    }).catch(function () { say('The move could not be sent; nothing changed. Try the Move button.'); })
      .then(function () { busy = false; });
  }

  // Dragging: a card onto a column.
  var dragged = null;
  document.addEventListener('dragstart', function (e) {
    var card = e.target.closest && e.target.closest('#board .card[draggable="true"]');
    if (!card) return;
    dragged = card;
    e.dataTransfer.effectAllowed = 'move';
    e.dataTransfer.setData('text/plain', card.getAttribute('data-id'));
  });
  document.addEventListener('dragover', function (e) {
    var column = dragged && e.target.closest && e.target.closest('#board .board-column');
    if (!column) return;
    e.preventDefault();
    columns().forEach(function (c) { c.classList.toggle('drop-target', c === column); });
  });
  document.addEventListener('dragend', function () {
    columns().forEach(function (c) { c.classList.remove('drop-target'); });
    dragged = null;
  });
  document.addEventListener('drop', function (e) {
    var column = dragged && e.target.closest && e.target.closest('#board .board-column');
    if (!column) return;
    e.preventDefault();
    var card = dragged;
    columns().forEach(function (c) { c.classList.remove('drop-target'); });
    dragged = null;
    move(card, column.getAttribute('data-stage'));
  });

  // The keyboard: Space picks the focused card up, the arrows choose a column, Enter drops, Escape cancels.
  var lifted = null, target = -1;
  function mark() {
    columns().forEach(function (c, i) { c.classList.toggle('drop-target', i === target); });
  }
  function drop() {
    if (lifted) lifted.classList.remove('lifted');
    lifted = null; target = -1; mark();
  }
  document.addEventListener('keydown', function (e) {
    var card = e.target.classList && e.target.classList.contains('card') && e.target.getAttribute('draggable') === 'true' ? e.target : null;
    if (!card) return;
    var all = columns();
    if (!lifted && (e.key === ' ' || e.key === 'Spacebar')) {
      e.preventDefault();
      lifted = card; card.classList.add('lifted');
      target = all.findIndex(function (c) { return c.getAttribute('data-stage') === card.getAttribute('data-stage'); });
      mark();
      say('Picked up ' + titleOf(card) + ', in ' + nameOf(all[target]) + '. Left and right arrows choose a column, Enter drops it, Escape cancels.');
    } else if (lifted === card && (e.key === 'ArrowRight' || e.key === 'ArrowLeft')) {
      e.preventDefault();
      target = Math.max(0, Math.min(all.length - 1, target + (e.key === 'ArrowRight' ? 1 : -1)));
      mark();
      var stage = all[target].getAttribute('data-stage');
      say(nameOf(all[target]) + (stage === card.getAttribute('data-stage') ? ', where it is now.' : canGo(card, stage) ? '.' : ': it cannot be moved there.'));
    } else if (lifted === card && e.key === 'Enter') {
      e.preventDefault();
      var to = all[target].getAttribute('data-stage');
      drop();
      move(card, to);
    } else if (lifted === card && e.key === 'Escape') {
      e.preventDefault();
      drop();
      say('Not moved: ' + titleOf(card) + ' stays where it was.');
    }
  });
  document.addEventListener('focusout', function (e) { if (lifted && e.target === lifted) { drop(); } });
})();
`;
