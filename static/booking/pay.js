/* The card payment step. Stripe's own card form (Stripe.js, loaded from STRIPE_JS_URL) gathers the
 * card; this file sends the payment method's id to /orders/<ref>/pay, which charges it on the
 * server, and finishes 3-D Secure with Stripe.js when the bank asks for it. Without this file (no
 * JavaScript) the card choice stays disabled and the box office still works. */
(function () {
  "use strict";
  // Django's JavaScript catalog (/i18n/js/, loaded before this file) translates; English without it.
  var gettext = window.gettext || function (text) { return text; };

  // Step 1: the card choice needs JavaScript, so it is switched on here (and preferred).
  function enableCard(root) {
    root.querySelectorAll("[data-without-js]").forEach(function (note) { note.hidden = true; });
    root.querySelectorAll("input[data-needs-js]").forEach(function (input) {
      input.disabled = false;
      var form = input.form;
      if (form && form.hasAttribute("data-prefer-card") && !form.dataset.chosen) input.checked = true;
    });
    root.querySelectorAll("form[data-prefer-card] input[name=method]").forEach(function (input) {
      input.addEventListener("change", function () { input.form.dataset.chosen = "1"; });
    });
  }

  function csrf(form) {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  async function post(url, form, data) {
    var body = new URLSearchParams(data);
    var response = await fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(form), "Accept": "application/json" },
    });
    var answer = await response.json().catch(function () { return {}; });
    if (!answer.status) answer = { status: "failed", message: gettext("The payment could not be sent. Please try again.") };
    return answer;
  }

  // A payment method from the card form. Stripe.js makes one (createPaymentMethod); localstripe's
  // fake Stripe.js (development and tests) has none, so there a token's card stands in for it.
  async function paymentMethod(stripe, card) {
    var made = stripe.createPaymentMethod ? await stripe.createPaymentMethod({ type: "card", card: card }) : null;
    if (made && made.error) return { error: made.error };
    if (made && made.paymentMethod) return { id: made.paymentMethod.id };
    var token = await stripe.createToken(card);
    if (!token || token.error) return { error: (token && token.error) || {} };
    return { id: token.token.card.id };
  }

  // Stripe.js is loaded only when the card form is shown (after htmx has put it in place):
  // localstripe's fake Stripe.js declares a global "class Element", which hides the DOM's Element
  // from every later script and so stops htmx on the page. Nothing on the card step needs htmx.
  function loadStripe(url) {
    return new Promise(function (resolve) {
      if (typeof window.Stripe === "function" || !url) return resolve();
      var script = document.createElement("script");
      script.src = url;
      script.onload = script.onerror = function () { resolve(); };
      document.head.appendChild(script);
    });
  }

  async function setupCardForm(box) {
    if (box.dataset.ready) return;
    box.dataset.ready = "1";
    await loadStripe(box.dataset.stripeJs);
    var form = box.querySelector("form[data-pay]");
    var errorBox = box.querySelector("[data-card-error]");
    var button = box.querySelector("[data-pay-button]");
    var busy = box.querySelector("[data-card-busy]");
    function showError(text) {
      errorBox.textContent = text;
      errorBox.hidden = !text;
      if (text) errorBox.focus && errorBox.setAttribute("tabindex", "-1");
    }
    function setBusy(on) {
      button.disabled = on;
      busy.hidden = !on;
      document.body.toggleAttribute("data-paying", on);
    }
    if (typeof window.Stripe !== "function") {
      showError(gettext("The card form could not be loaded. Please reload the page."));
      button.disabled = true;
      return;
    }
    var stripe = window.Stripe(box.dataset.key);
    var card = stripe.elements().create("card", { hidePostalCode: true });
    card.mount(box.querySelector("[data-card-element]"));

    async function finish(answer) {
      if (answer.status === "action" && answer.client_secret) {
        busy.lastChild.textContent = " " + gettext("Confirm the payment with your bank (3-D Secure)…");
        await stripe.confirmCardPayment(answer.client_secret);  // the bank's step (3-D Secure)
        var status = await fetch(box.dataset.statusUrl + "?format=json", { credentials: "same-origin" });
        var after = await status.json().catch(function () { return {}; });
        if (after.status === "action") after = { status: "failed", message: gettext("The bank's check was not finished. Please try again.") };
        return finish(after.status ? after : { status: "processing", redirect: window.location.href });
      }
      if (answer.status === "failed" || answer.status === "open" || answer.status === "canceled") {
        setBusy(false);
        showError(answer.message || gettext("The payment did not go through. Please try again or use another card."));
        return;
      }
      // paid, processing (the page waits for the outcome), expired, refunded...: the order's page
      window.location.assign(answer.redirect || window.location.href);
    }

    form.addEventListener("submit", async function (e) {
      e.preventDefault();
      if (button.disabled) return;  // a double click pays once
      showError("");
      setBusy(true);
      try {
        var made = await paymentMethod(stripe, card);
        if (made.error) {
          setBusy(false);
          showError(made.error.message || gettext("Please check the card details."));
          return;
        }
        await finish(await post(form.action, form, { payment_method: made.id }));
      } catch (err) {
        setBusy(false);
        showError(gettext("Something went wrong. Nothing was charged twice; please try again."));
      }
    });
  }

  function init(root) {
    enableCard(root);
    root.querySelectorAll("[data-card-form]").forEach(setupCardForm);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function () { init(document); });
})();
